// A console login that expires, is dropped for newer ones, or logs out closes the pages it opened:
// the sessions on an injected clock, and the API server sweeping them at each WebSocket heartbeat.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import { WebSocket } from 'ws';
import { ApiServer } from '../../../daemon/api/server.js';
import { Metrics } from '../../../daemon/api/metrics.js';
import { HttpRoutes } from '../../../daemon/api/routes.js';
import { RpcRegistry } from '../../../daemon/api/rpc/registry.js';
import { loadConfig } from '../../../daemon/config/load.js';
import { ConsoleSessions, SESSION_COOKIE } from '../../../daemon/console/sessions.js';
import { Logs } from '../../../daemon/log.js';
import { within } from '../../helpers/wait.js';

const request = (id: string) => ({ headers: { cookie: `${SESSION_COOKIE}=${id}` } }) as IncomingMessage;

test('a session ends by logout, by expiry (swept, or seen expired) and by being the oldest of too many', () => {
  let now = 0;
  const s = new ConsoleSessions(60, () => now);
  const ended: string[] = [];
  const [a, b, c] = [s.create(), s.create(), s.create()];
  s.onRevoke(request(a), (why) => ended.push(`a: ${why}`));
  s.onRevoke(request(b), (why) => ended.push(`b: ${why}`));
  const off = s.onRevoke(request(c), (why) => ended.push(`c: ${why}`));
  s.revoke(a);
  now = 59;
  s.sweep();
  assert.deepEqual(ended, ['a: logged out']);
  now = 60;
  assert.equal(s.valid(b), false);
  off();
  s.sweep();
  assert.deepEqual(ended, ['a: logged out', 'b: session expired'], 'c unsubscribed');
  const oldest = s.create();
  s.onRevoke(request(oldest), (why) => ended.push(`oldest: ${why}`));
  for (let i = 0; i < 256; i++) s.create();
  assert.equal(ended.at(-1), 'oldest: too many logins');
});

test('the API server closes a console WebSocket whose login expired (1008 "session expired")', async (t) => {
  let now = 0;
  const sessions = new ConsoleSessions(60, () => now);
  const config = loadConfig({ env: {}, overrides: [{ server: { port: 0, ws_heartbeat_ms: 100 } }] });
  const api = new ApiServer({
    config: config.server,
    token: 'x'.repeat(32),
    logs: new Logs({ ...config.logging, level: 'silent' }),
    routes: new HttpRoutes(),
    rpc: new RpcRegistry(),
    metrics: new Metrics(),
    sessions,
  });
  await api.start();
  t.after(() => api.stop());
  const origin = api.url();
  const ws = new WebSocket(`${api.url('ws')}/ws`, {
    headers: { cookie: `${SESSION_COOKIE}=${sessions.create()}`, origin },
  });
  const closed = new Promise<[number, string]>((resolve) =>
    ws.once('close', (code, reason) => resolve([code, reason.toString()])),
  );
  await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
  now = 61;
  assert.deepEqual(await within(closed, 10_000, 'the expired page to be closed'), [1008, 'session expired']);
});
