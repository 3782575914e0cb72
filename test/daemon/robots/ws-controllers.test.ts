// A controller socket sending ever new invalid envelopes: each kind of problem is logged once, at
// most MAX_WARNINGS kinds, then one line saying the rest are not logged.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { WebSocket, WebSocketServer } from 'ws';
import { MAX_WARNINGS, WsControllers } from '../../../daemon/robots/ws-controllers.js';
import { waitFor } from '../../helpers/wait.js';

test('a controller sending 200 different invalid envelopes gets MAX_WARNINGS warnings and one more', async (t) => {
  const lines: { level: number; msg: string }[] = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      for (const l of chunk.toString().split('\n')) if (l) lines.push(JSON.parse(l));
      done();
    },
  });
  const controllers = new WsControllers(
    {
      accepts: () => false,
      message: () => undefined,
      scene: () => undefined,
      closed: () => undefined,
      frame: () => undefined,
      dropped: () => undefined,
      invalid: () => undefined,
    },
    pino({ level: 'warn' }, sink),
  );
  const server = new WebSocketServer({ host: '127.0.0.1', port: 0 });
  await once(server, 'listening');
  server.on('connection', (ws) => controllers.attach(ws, 'test'));
  const client = new WebSocket(`ws://127.0.0.1:${(server.address() as AddressInfo).port}`);
  await once(client, 'open');
  t.after(async () => {
    client.terminate();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
  // Distinct robots announced that are not served: each a new kind of problem.
  for (let i = 0; i < 200; i++)
    client.send(JSON.stringify({ type: 'availability', robot: `r${i}`, payload: 'online' }));
  client.send('not json');
  await waitFor(() => (lines.length > MAX_WARNINGS ? true : undefined), 'the warnings');
  // A reply to a ping comes after every message sent before it was handled.
  client.ping();
  await once(client, 'pong');
  const warnings = lines.filter((l) => l.level === 40);
  assert.equal(warnings.length, MAX_WARNINGS + 1, JSON.stringify(warnings.slice(-3)));
  assert.match(warnings.at(-1)!.msg, /more than 32 kinds of problem from this controller: no more are logged/);
});
