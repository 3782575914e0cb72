// The console's serving and login: the page and its files are public, the token is exchanged
// for an HttpOnly session cookie that opens /ws from the same origin only, and never HTTP routes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { gunzipSync } from 'node:zlib';
import { WebSocket } from 'ws';
import { HttpRoutes } from '../../../daemon/api/routes.js';
import { registerConsoleRoutes } from '../../../daemon/console/routes.js';
import { ConsoleSessions } from '../../../daemon/console/sessions.js';
import type { Logger } from '../../../daemon/log.js';
import { startTestDaemon, TEST_TOKEN, type TestDaemon } from '../../helpers/daemon.js';

async function login(d: TestDaemon, token: string, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${d.http}/console/login`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    body: new URLSearchParams({ token }).toString(),
  });
}

/** The session cookie (name=value) a successful login sets. */
async function sessionCookie(d: TestDaemon): Promise<string> {
  const r = await login(d, TEST_TOKEN);
  assert.equal(r.status, 303);
  return r.headers.get('set-cookie')!.split(';')[0]!;
}

/** Opens /ws (or `path`) with these headers: the HTTP status of the upgrade (101 = open). */
function upgrade(d: TestDaemon, headers: Record<string, string>, path = '/ws'): Promise<number> {
  return new Promise((resolve) => {
    const ws = new WebSocket(d.api.url('ws') + path, { headers });
    ws.once('open', () => {
      ws.close();
      resolve(101);
    });
    ws.once('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
    ws.once('error', () => undefined);
  });
}

test('console serving and login', async (t) => {
  const d = await startTestDaemon();
  t.after(() => d.stop());
  const origin = d.http;
  const host = new URL(d.http).host;

  await t.test('GET / without a session is the login page, with a strict CSP and no script', async () => {
    const r = await fetch(`${d.http}/`);
    assert.equal(r.status, 200);
    const html = await r.text();
    assert.match(html, /<form method="post" action="\/console\/login"/);
    assert.doesNotMatch(html, /<script/);
    const csp = r.headers.get('content-security-policy')!;
    assert.match(csp, /default-src 'none'/);
    assert.match(csp, /script-src 'self'(;|$)/);
    assert.match(csp, /frame-ancestors 'none'/);
    assert.equal(r.headers.get('x-content-type-options'), 'nosniff');
  });

  await t.test('a wrong token is refused with the login page saying so; no cookie', async () => {
    const r = await login(d, 'wrong-token-0123456789');
    assert.equal(r.status, 401);
    assert.equal(r.headers.get('set-cookie'), null);
    assert.match(await r.text(), /data-login-error>Wrong token/);
  });

  await t.test('the right token: 303 to / with an HttpOnly SameSite=Strict cookie that is not the token', async () => {
    const r = await login(d, TEST_TOKEN);
    assert.equal(r.status, 303);
    assert.equal(r.headers.get('location'), '/');
    const cookie = r.headers.get('set-cookie')!;
    assert.match(cookie, /^brainstem_console=[A-Za-z0-9_-]{43}; Path=\/; HttpOnly; SameSite=Strict; Max-Age=43200$/);
    assert.ok(!cookie.includes(TEST_TOKEN));
  });

  await t.test('a JSON login works too; a login posted from another origin is refused', async () => {
    const r = await fetch(`${d.http}/console/login`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ token: TEST_TOKEN }),
    });
    assert.equal(r.status, 303);
    assert.equal((await login(d, TEST_TOKEN, { origin: 'http://evil.example' })).status, 403);
  });

  await t.test(
    'with the cookie, / is the console; its only inline script (the import map) is hashed in the CSP',
    async () => {
      const cookie = await sessionCookie(d);
      const r = await fetch(`${d.http}/`, { headers: { cookie } });
      const html = await r.text();
      assert.match(html, /id="estop"/);
      const inline = [...html.matchAll(/<script([^>]*)>([\s\S]*?)<\/script>/g)].filter((m) => m[2]!.trim());
      assert.equal(inline.length, 1);
      assert.match(inline[0]![1]!, /type="importmap"/);
      const hash = createHash('sha256').update(inline[0]![2]!).digest('base64');
      assert.ok(r.headers.get('content-security-policy')!.includes(`'sha256-${hash}'`));
      // An empty icon in the page: the browser asks for no /favicon.ico (a 401 without the token).
      assert.match(html, /<link rel="icon" href="data:,">/);
      assert.match(r.headers.get('content-security-policy')!, /img-src [^;]*data:/);
    },
  );

  await t.test('the page files and vendored three.js and uPlot are served (gzip, ETag)', async () => {
    for (const path of [
      '/console/app.js',
      '/console/estop.js',
      '/console/console.css',
      '/console/vendor/three.module.js',
      '/console/vendor/three.core.js',
      '/console/vendor/OrbitControls.js',
      '/console/vendor/uPlot.esm.js',
      '/console/vendor/uPlot.min.css',
    ]) {
      const r = await fetch(`${d.http}${path}`);
      assert.equal(r.status, 200, path);
      assert.match(r.headers.get('content-type')!, path.endsWith('.css') ? /^text\/css/ : /^text\/javascript/);
      assert.ok((await r.arrayBuffer()).byteLength > 100, path);
    }
    const raw = await new Promise<{ encoding?: string; body: Buffer; etag?: string }>((resolve, reject) => {
      import('node:http').then(({ get }) =>
        get(`${d.http}/console/vendor/three.core.js`, { headers: { 'accept-encoding': 'gzip' } }, (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () =>
            resolve({
              encoding: res.headers['content-encoding'],
              etag: res.headers.etag,
              body: Buffer.concat(chunks),
            }),
          );
        }).on('error', reject),
      );
    });
    assert.equal(raw.encoding, 'gzip');
    assert.match(gunzipSync(raw.body).toString('utf8', 0, 200), /three/i);
    const again = await fetch(`${d.http}/console/vendor/three.core.js`, { headers: { 'if-none-match': raw.etag! } });
    assert.equal(again.status, 304);
    assert.equal((await fetch(`${d.http}/console/nope.js`)).status, 404);
    assert.equal((await fetch(`${d.http}/console/vendor/..%2Fpackage.json`)).status, 404);
  });

  await t.test('the cookie opens /ws from the same origin only, never /controller nor HTTP routes', async () => {
    const cookie = await sessionCookie(d);
    assert.equal(await upgrade(d, { cookie, origin }), 101);
    assert.equal(
      await upgrade(d, { cookie, origin: 'http://evil.example' }),
      403,
      'another site: refused before any credential',
    );
    assert.equal(await upgrade(d, { cookie }), 401, 'no Origin: not a browser page of this host');
    assert.equal(await upgrade(d, { origin }), 401);
    assert.equal(await upgrade(d, { cookie, origin }, '/controller'), 401);
    assert.equal((await fetch(`${d.http}/metrics`, { headers: { cookie } })).status, 401);
    assert.equal((await fetch(`${d.http}/v1/models`, { headers: { cookie } })).status, 401);
    assert.equal(host.length > 0, true);
  });

  await t.test('logout revokes the session and closes its open WebSockets', async () => {
    const cookie = await sessionCookie(d);
    const session = () => fetch(`${d.http}/console/session`, { headers: { cookie } });
    assert.equal((await session()).status, 204, 'a live login');
    assert.equal((await fetch(`${d.http}/console/session`)).status, 401, 'no cookie');
    const open = new WebSocket(`${d.api.url('ws')}/ws`, { headers: { cookie, origin } });
    await new Promise((resolve, reject) => open.once('open', resolve).once('error', reject));
    const closed = new Promise<number>((resolve) => open.once('close', (code) => resolve(code)));
    const r = await fetch(`${d.http}/console/logout`, { method: 'POST', redirect: 'manual', headers: { cookie } });
    assert.equal(await closed, 1008, 'the page connection opened with that login is closed');
    assert.equal(r.status, 303);
    assert.match(r.headers.get('set-cookie')!, /Max-Age=0/);
    assert.equal(await upgrade(d, { cookie, origin }), 401);
    assert.equal((await session()).status, 401, 'the login ended');
    assert.doesNotMatch(await (await fetch(`${d.http}/`, { headers: { cookie } })).text(), /id="estop"/);
  });
});

/** A form login sent from `local` (a 127.0.0.0/8 address): its status, Retry-After and body. */
function loginFrom(
  d: TestDaemon,
  token: string,
  local: string,
): Promise<{ status: number; retry: string; body: string }> {
  const body = new URLSearchParams({ token }).toString();
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      `${d.http}/console/login`,
      { method: 'POST', localAddress: local, headers: { 'content-type': 'application/x-www-form-urlencoded' } },
      (res) => {
        let text = '';
        res.on('data', (c) => (text += c));
        res.on('end', () =>
          resolve({ status: res.statusCode!, retry: String(res.headers['retry-after'] ?? ''), body: text }),
        );
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

test('10 wrong tokens from one address within 10 s hold that address (429, Retry-After), not the others; 100 from all hold everyone', async (t) => {
  const d = await startTestDaemon();
  t.after(() => d.stop());
  for (let i = 0; i < 10; i++)
    assert.equal((await loginFrom(d, `wrong-${i}-0123456789abcdef`, '127.0.0.1')).status, 401);
  const held = await loginFrom(d, TEST_TOKEN, '127.0.0.1');
  assert.equal(held.status, 429);
  assert.ok(Number(held.retry) >= 1);
  assert.match(
    JSON.parse(held.body).error.message,
    /10 wrong tokens from this address within 10 s; try again in \d+ s/,
  );
  assert.equal((await loginFrom(d, TEST_TOKEN, '127.0.0.2')).status, 303, 'another address logs in');
  // Nine more addresses fail ten times each: 100 failures in the window from all of them.
  for (let a = 3; a <= 11; a++)
    for (let i = 0; i < 10; i++)
      assert.equal((await loginFrom(d, `wrong-${i}-0123456789abcdef`, `127.0.0.${a}`)).status, 401);
  const everyone = await loginFrom(d, TEST_TOKEN, '127.0.0.12');
  assert.equal(everyone.status, 429);
  assert.match(JSON.parse(everyone.body).error.message, /100 wrong tokens from all addresses within 10 s/);
});

test('server.console.enabled false: no page, / needs the token like any route', async (t) => {
  const d = await startTestDaemon({ server: { console: { enabled: false } } });
  t.after(() => d.stop());
  assert.equal((await fetch(`${d.http}/`)).status, 401);
  assert.equal((await login(d, TEST_TOKEN)).status, 401);
});

test('without the page files the daemon still serves the API and / answers 503 naming them', async () => {
  const routes = new HttpRoutes();
  const warnings: string[] = [];
  const log = { warn: (m: string) => warnings.push(m) } as unknown as Logger;
  registerConsoleRoutes(routes, TEST_TOKEN, new ConsoleSessions(60), log, { webDir: '/nonexistent/web' });
  assert.match(warnings[0]!, /operator console's files are missing \(\/nonexistent\/web\/index.html is missing\)/);
  const m = routes.match('GET', '/');
  assert.ok('route' in m);
  assert.throws(() => m.route.handler({} as never, {} as never, {} as never), { status: 503 });
  assert.equal(routes.list().length, 1);
});

test('sessions expire after session_ttl_s on their clock and stay bounded in number', () => {
  let now = 0;
  const s = new ConsoleSessions(60, () => now);
  const id = s.create();
  assert.ok(s.valid(id));
  now = 59.9;
  assert.ok(s.valid(id));
  now = 60;
  assert.ok(!s.valid(id));
  const first = s.create();
  for (let i = 0; i < 256; i++) s.create();
  assert.ok(!s.valid(first), 'the oldest of 257 is dropped');
  assert.ok(!s.valid(undefined));
});
