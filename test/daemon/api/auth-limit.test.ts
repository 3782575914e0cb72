// Token guessing is rate limited everywhere a token is checked: Bearer on any route, ?token= on
// WebSocket upgrades and the console login draw on one budget per address (10 wrong in 10 s),
// answered 429 with Retry-After; logins sent together cannot outrun it. An injected clock.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AuthLimiter } from '../../../daemon/api/auth-limiter.js';
import { HttpRoutes } from '../../../daemon/api/routes.js';
import { registerConsoleRoutes } from '../../../daemon/console/routes.js';
import { ConsoleSessions } from '../../../daemon/console/sessions.js';
import { pino } from 'pino';
import { API_TOKEN, httpTo, startApiServer } from '../../helpers/api-server.js';
import { refusedStatus } from '../../helpers/rpc.js';
import { waitFor } from '../../helpers/wait.js';

async function server(t: { after: (fn: () => unknown) => void }) {
  let now = 0;
  const limiter = new AuthLimiter(() => now);
  const routes = new HttpRoutes();
  const sessions = new ConsoleSessions(60);
  registerConsoleRoutes(routes, API_TOKEN, sessions, pino({ level: 'silent' }), {
    limiter,
  });
  routes.add({ method: 'GET', path: '/v1/ping', handler: (_req, res) => void res.end('pong') });
  const { api, port } = await startApiServer({}, { routes, sessions, limiter });
  t.after(() => api.stop());
  const bearer = (token: string) => httpTo(port, '/v1/ping', { headers: { authorization: `Bearer ${token}` } });
  const login = (token: string) =>
    httpTo(port, '/console/login', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: `token=${token}`,
    });
  return {
    routes,
    port,
    bearer,
    login,
    ws: (token: string) => `ws://127.0.0.1:${port}/ws?token=${token}`,
    advance: (ms: number) => (now += ms),
  };
}

test('wrong Bearer tokens past 10 hold the address (429, Retry-After) for any token, console login included', async (t) => {
  const { port, bearer, login, ws, advance } = await server(t);
  assert.equal((await bearer(API_TOKEN)).status, 200);
  for (let i = 0; i < 10; i++) assert.equal((await bearer(`wrong-${i}`)).status, 401, `guess ${i}`);
  for (const r of [await bearer(API_TOKEN), await bearer('wrong-10')]) {
    assert.equal(r.status, 429);
    assert.equal(r.headers['retry-after'], '10');
    assert.deepEqual(JSON.parse(r.body).error, {
      message: 'API token: 10 wrong tokens from this address within 10 s; try again in 10 s',
      type: 'rate_limit_error',
      param: null,
      code: null,
    });
  }
  assert.equal((await httpTo(port, '/v1/ping')).status, 401, 'no token: not a guess');
  assert.equal(await refusedStatus(ws(API_TOKEN)), 429);
  const held = await login(API_TOKEN);
  assert.equal(held.status, 429);
  assert.match(JSON.parse(held.body).error.message, /^console login: 10 wrong tokens from this address/);
  advance(9_000);
  assert.equal((await bearer(API_TOKEN)).headers['retry-after'], '1');
  advance(1_000);
  assert.equal((await bearer(API_TOKEN)).status, 200);
});

test('wrong ?token= upgrades count too: the 11th upgrade is 429 whatever its token', async (t) => {
  const { bearer, ws } = await server(t);
  for (let i = 0; i < 10; i++) assert.equal(await refusedStatus(ws(`wrong-${i}`)), 401, `guess ${i}`);
  assert.equal(await refusedStatus(ws(API_TOKEN)), 429);
  assert.equal((await bearer(API_TOKEN)).status, 429);
});

test('60 logins sent together with wrong tokens: 10 are heard (401), the other 50 wait (429)', async (t) => {
  const { routes, port } = await server(t);
  // Every login passes the limiter before any body arrives: bodies are sent once all 60 wait for theirs.
  const m = routes.match('POST', '/console/login');
  assert.ok('route' in m);
  const handler = m.route.handler;
  let entered = 0;
  m.route.handler = (...args) => (entered++, handler(...args));
  const body = 'token=wrong-guess-0123456789';
  const sends: (() => void)[] = [];
  const replies = Array.from({ length: 60 }, () => {
    return httpTo(port, '/console/login', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'content-length': String(body.length) },
      body: new Promise<string>((resolve) => sends.push(() => resolve(body))),
    });
  });
  await waitFor(() => (entered === 60 ? true : undefined), 'all 60 logins to wait for their bodies');
  for (const send of sends) send();
  const statuses = (await Promise.all(replies)).map((r) => r.status);
  assert.deepEqual([statuses.filter((s) => s === 401).length, statuses.filter((s) => s === 429).length], [10, 50]);
});
