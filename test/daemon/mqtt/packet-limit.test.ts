// The embedded broker's packet-size guard: fixed-header scanning by hand, seeded random packet
// streams cut at random points, and a real broker closing an oversized (and unauthenticated) client.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { pino } from 'pino';
import { Prng } from '../../../robot/common/prng.js';
import { EmbeddedBroker } from '../../../daemon/mqtt/broker.js';
import { MqttFrameScanner } from '../../../daemon/mqtt/packet-limit.js';
import { connectMqtt, nextMessage } from '../../helpers/mqtt.js';
import { within } from '../../helpers/wait.js';

/** A fixed header (type byte, remaining length as MQTT's base-128 varint) for `length` body bytes. */
function header(type: number, length: number): number[] {
  const out = [type];
  do {
    let byte = length % 128;
    length = Math.floor(length / 128);
    if (length > 0) byte |= 0x80;
    out.push(byte);
  } while (length > 0);
  return out;
}

test('hand cases: multi-byte lengths, empty packets, headers split across chunks, a 5-byte length', () => {
  assert.deepEqual(header(0x30, 321), [0x30, 0xc1, 0x02]);
  const s = new MqttFrameScanner(() => 400);
  // PINGREQ (no body), then a 321-byte PUBLISH whose length bytes arrive one chunk each.
  assert.equal(s.scan(Uint8Array.from([0xc0, 0x00, 0x30, 0xc1])), undefined);
  assert.equal(s.scan(Uint8Array.from([0x02])), undefined);
  assert.equal(s.scan(new Uint8Array(320)), undefined);
  assert.equal(s.packets, 1);
  assert.equal(s.scan(new Uint8Array(1)), undefined);
  assert.equal(s.packets, 2);
  assert.deepEqual(s.scan(Uint8Array.from(header(0x30, 401))), { declared: 401, limit: 400 });
  // The limit can differ per packet: the first (CONNECT) gets its own.
  const first = new MqttFrameScanner((i) => (i === 0 ? 10 : 1000));
  assert.deepEqual(first.scan(Uint8Array.from(header(0x10, 11))), { declared: 11, limit: 10 });
  const malformed = new MqttFrameScanner(() => Number.MAX_SAFE_INTEGER);
  assert.deepEqual(malformed.scan(Uint8Array.from([0x30, 0xff, 0xff, 0xff, 0xff])), {
    declared: -1,
    limit: Number.MAX_SAFE_INTEGER,
  });
});

test('seeded: random packet streams cut at random points are refused exactly at the first packet over the limit', () => {
  for (let seed = 1; seed <= 300; seed++) {
    const rng = new Prng(seed);
    const limit = rng.int(300);
    const lengths = Array.from({ length: 1 + rng.int(12) }, () => (rng.int(4) === 0 ? rng.int(20_000) : rng.int(300)));
    const bytes = Uint8Array.from(lengths.flatMap((n) => [...header(0x30, n), ...new Array<number>(n).fill(0x30)]));
    const firstOver = lengths.findIndex((n) => n > limit);
    const scanner = new MqttFrameScanner(() => limit);
    let refusal: ReturnType<MqttFrameScanner['scan']>;
    for (let at = 0; at < bytes.length && !refusal; ) {
      const n = 1 + rng.int(64);
      refusal = scanner.scan(bytes.subarray(at, at + n));
      at += n;
    }
    const context = `seed ${seed}: limit ${limit}, lengths ${JSON.stringify(lengths)}`;
    if (firstOver < 0) {
      assert.equal(refusal, undefined, context);
      assert.equal(scanner.packets, lengths.length, context);
    } else {
      assert.deepEqual(refusal, { declared: lengths[firstOver], limit }, context);
      assert.equal(scanner.packets, firstOver, context);
    }
  }
});

test('the embedded broker closes a connection at an oversized header: after login, and before it', async (t) => {
  const log = pino({ level: 'silent' });
  const creds = { username: 'u', password: 'p'.repeat(16) };
  const broker = new EmbeddedBroker({
    host: '127.0.0.1',
    port: 0,
    base: 'b',
    identities: [{ ...creds, role: { kind: 'daemon' } }],
    maxPacketBytes: 4096,
    log,
  });
  await broker.start();
  t.after(() => broker.stop());
  const url = broker.url();
  const reader = await connectMqtt({ url, ...creds });
  const writer = await connectMqtt({ url, ...creds });
  t.after(() => reader.endAsync(true));
  t.after(() => writer.endAsync(true));
  // Under the limit: delivered; over it: the sender is disconnected and nothing is delivered.
  await reader.subscribeAsync('b/daemon/heartbeat', { qos: 1 });
  const small = nextMessage(reader, 'b/daemon/heartbeat');
  await writer.publishAsync('b/daemon/heartbeat', Buffer.alloc(4000, 1));
  assert.equal((await small).payload.length, 4000);
  const closed = new Promise<void>((resolve) => writer.once('close', () => resolve()));
  writer.publish('b/daemon/heartbeat', Buffer.alloc(5000, 2));
  await within(closed, 5000, 'the oversized sender to be disconnected');
  // Unauthenticated: a CONNECT declaring 100 MB is closed at its header, without a login.
  const raw = connect(broker.address().port, '127.0.0.1');
  const ended = new Promise<void>((resolve) => raw.once('close', () => resolve()));
  raw.write(Uint8Array.from(header(0x10, 100_000_000)));
  await within(ended, 5000, 'the raw socket to be closed');
  assert.equal(reader.connected, true, 'other clients stay connected');
});
