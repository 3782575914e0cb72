// DNS rebinding: requests and WebSocket upgrades under a Host name that is not the daemon's are
// refused with 421 before anything else (a rebound page would pass the Origin == Host checks);
// loopback names, IP addresses off loopback, server.host, the hostname and allowed_hosts pass.
// Upgrades from another site's page (a foreign Origin) are 403, uncounted by the token limiter.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { HostCheck } from '../../../daemon/api/host-check.js';
import { HttpRoutes } from '../../../daemon/api/routes.js';
import { registerConsoleRoutes } from '../../../daemon/console/routes.js';
import { ConsoleSessions } from '../../../daemon/console/sessions.js';
import { pino } from 'pino';
import { WebSocket } from 'ws';
import { API_TOKEN, httpTo, startApiServer } from '../../helpers/api-server.js';
import { refusedStatus } from '../../helpers/rpc.js';

test('which Host headers a daemon on loopback and one on 0.0.0.0 answer to', () => {
  const loopback = new HostCheck('127.0.0.1', ['robot-pc.lan'], 'mini');
  const wide = new HostCheck('0.0.0.0', [], 'mini');
  for (const h of [
    'localhost',
    'LOCALHOST:7777',
    'localhost.',
    'app.localhost',
    '127.0.0.1:1',
    '127.9.9.9',
    '[::1]:7777',
  ])
    assert.ok(loopback.allows(h) && wide.allows(h), h);
  for (const h of ['mini', 'MINI:7777', 'robot-pc.lan:80', undefined]) assert.ok(loopback.allows(h), String(h));
  for (const h of ['192.168.1.7:7777', '[fe80::1]', '10.0.0.2']) {
    assert.ok(wide.allows(h), h);
    assert.equal(loopback.allows(h), false, h);
  }
  for (const h of ['evil.example', 'evil.example:7777', '127.0.0.1.nip.io', 'evil.example@127.0.0.1', 'a/b', '', 'x'])
    assert.equal(loopback.allows(h) || wide.allows(h), false, h);
});

test('a foreign Host is 421 on every route, the console login and WebSocket upgrades', async (t) => {
  const routes = new HttpRoutes();
  routes.add({ method: 'GET', path: '/health', auth: false, handler: (_req, res) => void res.end('ok') });
  const sessions = new ConsoleSessions(60);
  registerConsoleRoutes(routes, API_TOKEN, sessions, pino({ level: 'silent' }));
  const { api, port } = await startApiServer({ allowed_hosts: ['robot-pc.lan'] }, { routes, sessions });
  t.after(() => api.stop());
  const evil = `evil.example:${port}`;
  const auth = { authorization: `Bearer ${API_TOKEN}` };

  const health = await httpTo(port, '/health', { headers: { host: evil, ...auth } });
  assert.equal(health.status, 421);
  assert.deepEqual(JSON.parse(health.body).error, {
    message: `the Host header "${evil}" is not a name of this daemon (loopback, server.host, this machine's hostname or server.allowed_hosts); refused against DNS rebinding`,
    type: 'invalid_request_error',
    param: null,
    code: 'host_not_allowed',
  });
  // The rebinding attack itself: a same-"origin" login posted by the rebound page.
  const login = await httpTo(port, '/console/login', {
    method: 'POST',
    headers: { host: evil, origin: `http://${evil}`, 'content-type': 'application/x-www-form-urlencoded' },
    body: `token=${API_TOKEN}`,
  });
  assert.equal(login.status, 421);
  assert.equal(login.headers['set-cookie'], undefined);
  const ws = `ws://127.0.0.1:${port}/ws?token=${API_TOKEN}`;
  assert.equal(await refusedStatus(ws, { host: evil, origin: `http://${evil}` }), 421);

  for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`, `robot-pc.lan:${port}`])
    assert.equal((await httpTo(port, '/health', { headers: { host, ...auth } })).status, 200, host);
});

test('which Origins may open a WebSocket: none, the daemon’s own, or server.allowed_origins', () => {
  const allowed = ['http://robot-pc.lan:3000'];
  const ok = (origin: string | undefined, host = 'localhost:7777') => HostCheck.originAllowed(origin, host, allowed);
  for (const o of [undefined, 'http://localhost:7777', 'HTTP://LOCALHOST:7777', 'http://robot-pc.lan:3000'])
    assert.ok(ok(o), String(o));
  for (const o of ['http://evil.example', 'http://localhost:3000', 'https://robot-pc.lan:3000', 'null', 'junk'])
    assert.equal(ok(o), false, o);
  assert.equal(HostCheck.originAllowed('http://localhost:7777', undefined, allowed), false, 'an Origin without a Host');
});

test('a foreign Origin’s upgrades are 403 and never spend the wrong-token budget', async (t) => {
  const { api, port } = await startApiServer({ allowed_origins: ['http://app.localhost:3000'] });
  t.after(() => api.stop());
  const ws = (token: string) => `ws://127.0.0.1:${port}/ws?token=${token}`;
  // More wrong tokens than the per-address limit (10), from a page of another site.
  for (let i = 0; i < 12; i++)
    assert.equal(await refusedStatus(ws(`guess-${i}`), { origin: 'http://evil.example' }), 403);
  // A local app (no Origin) and the allowed origin still get in with the token.
  for (const headers of [{}, { origin: 'http://app.localhost:3000' }]) {
    const client = new WebSocket(ws(API_TOKEN), { headers });
    await new Promise<void>((resolve, reject) => {
      client.once('open', () => resolve());
      client.once('unexpected-response', (_req, res) => reject(new Error(`refused ${res.statusCode}`)));
    });
    client.close();
  }
});
