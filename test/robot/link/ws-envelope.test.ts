import { test } from 'node:test';
import assert from 'node:assert/strict';
import { decodeEnvelope, encodeEnvelope } from '../../../robot/link/ws-envelope.js';

const hb = { v: 1, session: 'd', seq: 1, time: 5, period: 0.1, timeout: 0.5 } as const;
const stop = { v: 1, id: 's', arm: null, time: 5 } as const;

test('envelopes round-trip and carry the robot id except on heartbeat', () => {
  const e = decodeEnvelope(encodeEnvelope('heartbeat', null, hb), 'daemon');
  assert.deepEqual(e, { ok: true, value: { type: 'heartbeat', robot: null, payload: hb } });
  const s = decodeEnvelope(Buffer.from(encodeEnvelope('stop', 'arm1', stop)), 'daemon');
  assert.deepEqual(s, { ok: true, value: { type: 'stop', robot: 'arm1', payload: stop } });
  const a = decodeEnvelope(encodeEnvelope('availability', 'arm1', 'online'), 'controller');
  assert.ok(a.ok);
});

test('bad envelopes name the problem', () => {
  const cases: [string, 'controller' | 'daemon', RegExp][] = [
    ['{', 'daemon', /^envelope: must be JSON/],
    ['[]', 'daemon', /^envelope: must be an object, not an array/],
    [JSON.stringify({ type: 'move', robot: 'a', payload: {} }), 'daemon', /^envelope\.type: must be one of/],
    [JSON.stringify({ type: 'stop', robot: 'a' }), 'daemon', /^envelope\.payload: is required/],
    [
      JSON.stringify({ type: 'stop', robot: 'a', payload: stop, extra: 1 }),
      'daemon',
      /^envelope\.extra: is not a known field/,
    ],
    [JSON.stringify({ type: 'stop', robot: 'a/b', payload: stop }), 'daemon', /^envelope\.robot: must match/],
    [JSON.stringify({ type: 'stop', payload: stop }), 'daemon', /^envelope\.robot: is required on stop/],
    [
      JSON.stringify({ type: 'heartbeat', robot: 'a', payload: hb }),
      'daemon',
      /^envelope\.robot: must be absent on heartbeat/,
    ],
    [
      JSON.stringify({ type: 'stop', robot: 'a', payload: stop }),
      'controller',
      /^envelope\.type: is not sent by the controller \(it sends availability, description, state, events, sim_scene\)/,
    ],
    [
      JSON.stringify({ type: 'state', robot: 'a', payload: {} }),
      'daemon',
      /^envelope\.type: is not sent by the daemon/,
    ],
    [
      JSON.stringify({ type: 'stop', robot: 'a', payload: { ...stop, id: '' } }),
      'daemon',
      /^envelope\.payload \(stop\): stop\.id: must not be empty/,
    ],
  ];
  for (const [raw, from, re] of cases) {
    const r = decodeEnvelope(raw, from);
    assert.equal(r.ok, false, raw);
    assert.match(r.ok ? '' : r.message, re, raw);
  }
});

test('prototype keys and deep nesting in a controller frame are validation issues', () => {
  const proto = decodeEnvelope('{"type":"heartbeat","payload":{"__proto__":{"v":1}}}', 'daemon');
  assert.match(proto.ok ? '' : proto.message, /^envelope\.payload\.__proto__: is a reserved key/);
  const deep = decodeEnvelope(`{"type":"heartbeat","payload":${'['.repeat(100_000)}${']'.repeat(100_000)}}`, 'daemon');
  assert.match(deep.ok ? '' : deep.message, /^envelope: must not nest arrays and objects more than 64 levels deep/);
});
