// Integration: a daemon on free ports; HTTP routes, auth, metrics and JSON-RPC over /ws.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readJson, sendJson } from '../../../daemon/api/http.js';
import { int, obj } from '../../../robot/common/validation/builders.js';
import { createDaemon } from '../../../daemon/compose.js';
import { loadConfig } from '../../../daemon/config/load.js';
import { Logs } from '../../../daemon/log.js';
import { startTestDaemon, TEST_TOKEN, type TestDaemon } from '../../helpers/daemon.js';
import { parsePrometheus } from '../../helpers/prometheus.js';
import { refusedStatus, RpcTestClient } from '../../helpers/rpc.js';
import { tempDir } from '../../helpers/temp.js';
import { waitFor } from '../../helpers/wait.js';

let d: TestDaemon;
before(async () => {
  d = await startTestDaemon();
});
after(() => d.stop());

const auth = { authorization: `Bearer ${TEST_TOKEN}` };

test('/health turns 200 once every service has started (503 before)', async (t) => {
  const dir = tempDir();
  t.after(() => dir.remove());
  const config = loadConfig({
    env: {},
    overrides: { data_dir: dir.path, server: { port: 0, token: 'x' }, mqtt: { embedded: { port: 0 } } },
  });
  const parts = createDaemon(config, { logs: new Logs({ ...config.logging, level: 'silent' }) });
  const seen: number[] = [];
  const starting = parts.daemon.start();
  t.after(() => parts.daemon.stop());
  // The API starts first, so /health can answer while the broker and client are still starting.
  const url = await waitFor(() => (parts.api.status === 'ready' ? parts.api.url() : undefined), 'the API to listen');
  await waitFor(async () => {
    const r = await fetch(`${url}/health`);
    seen.push(r.status);
    return r.status === 200 ? true : undefined;
  }, '/health 200');
  await starting;
  assert.ok(
    seen.every((s, i) => (i === seen.length - 1 ? s === 200 : s === 503)),
    `statuses seen: ${seen}`,
  );
});

test('GET /health without the token says only ready or not: no URLs, counts, model names or pid', async () => {
  const r = await fetch(`${d.http}/health`);
  assert.equal(r.status, 200);
  assert.deepEqual(await r.json(), { status: 'ready', ready: true });
  const wrong = await fetch(`${d.http}/health`, { headers: { authorization: 'Bearer nope' } });
  assert.deepEqual([wrong.status, await wrong.json()], [200, { status: 'ready', ready: true }]);
  const model = await fetch(`${d.http}/health?model=demo`);
  assert.equal(model.status, 401, 'whether a model is configured is a detail too');
});

test('GET /health with the token reports every service', async () => {
  const r = await fetch(`${d.http}/health`, { headers: auth });
  assert.equal(r.status, 200);
  const body = (await r.json()) as any;
  assert.equal(body.status, 'ready');
  assert.deepEqual(Object.keys(body.services), ['api', 'mqtt-broker', 'mqtt-client', 'models', 'robots', 'policy']);
  assert.deepEqual(
    body.services.models.detail.models,
    { demo: { state: 'unloaded', ready: false } },
    'the demo model, not loaded until first use',
  );
  assert.equal(body.services['mqtt-client'].detail.protocol, '3.1.1');
  assert.equal(body.services['mqtt-client'].detail.connected, true);
});

test('other routes need the token in the header: 401 without, with a wrong one, or by ?token= (upgrades only)', async () => {
  const none = await fetch(`${d.http}/metrics`);
  assert.equal(none.status, 401);
  assert.equal(none.headers.get('www-authenticate'), 'Bearer realm="brainstem"');
  assert.equal(((await none.json()) as any).error.type, 'authentication_error');
  assert.equal((await fetch(`${d.http}/metrics`, { headers: { authorization: 'Bearer nope' } })).status, 401);
  assert.equal((await fetch(`${d.http}/metrics?token=nope`)).status, 401);
  assert.equal((await fetch(`${d.http}/metrics`, { headers: auth })).status, 200);
  const query = await fetch(`${d.http}/metrics?token=${TEST_TOKEN}`);
  assert.equal(query.status, 401);
  assert.match(((await query.json()) as any).error.message, /\?token= is accepted only on WebSocket upgrades/);
});

test('/metrics is valid Prometheus text with process, event-loop and daemon metrics', async () => {
  await fetch(`${d.http}/health`);
  const r = await fetch(`${d.http}/metrics`, { headers: auth });
  assert.match(r.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
  const { samples, types } = parsePrometheus(await r.text());
  const one = (name: string, labels: Record<string, string> = {}) =>
    samples.find((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
  assert.equal(types.get('nodejs_eventloop_lag_seconds'), 'gauge');
  assert.ok(one('nodejs_eventloop_lag_seconds')!.value >= 0);
  assert.ok(one('nodejs_eventloop_lag_p99_seconds'));
  assert.ok(one('process_cpu_user_seconds_total'));
  assert.ok(one('process_resident_memory_bytes')!.value > 0);
  assert.equal(one('brainstem_service_ready', { service: 'mqtt-client' })?.value, 1);
  assert.ok(one('brainstem_http_requests_total', { route: '/health', method: 'GET', status: '200' })!.value >= 1);
});

test('unknown routes are 404 and wrong methods 405, as JSON errors', async () => {
  const nf = await fetch(`${d.http}/nope`, { headers: auth });
  assert.equal(nf.status, 404);
  assert.deepEqual(await nf.json(), {
    error: { message: 'no route GET /nope', type: 'invalid_request_error', param: null, code: null },
  });
  const na = await fetch(`${d.http}/health`, { method: 'POST', headers: auth });
  assert.equal(na.status, 405);
  assert.equal(na.headers.get('allow'), 'GET');
});

test('auth comes before routing: without the token, unknown routes and wrong methods are 401 too', async () => {
  for (const [method, path] of [
    ['GET', '/nope'],
    ['POST', '/health'],
    ['DELETE', '/metrics'],
    ['GET', '/v1/nope'],
    ['GET', '/ws'],
  ] as const) {
    const r = await fetch(`${d.http}${path}`, { method });
    assert.equal(r.status, 401, `${method} ${path}`);
    assert.equal(((await r.json()) as any).error.type, 'authentication_error', `${method} ${path}`);
  }
  assert.equal(await refusedStatus(`${d.http.replace('http', 'ws')}/other`), 401, 'upgrades as well');
});

test('later parts can add routes: params, JSON bodies, and 413 for a body over the limit', async () => {
  d.routes.add({
    method: 'POST',
    path: '/test/echo/:name',
    handler: async (req, res, ctx) =>
      sendJson(res, 200, { name: ctx.params.name, body: await readJson(req, ctx.maxBodyBytes) }),
  });
  const ok = await fetch(`${d.http}/test/echo/left%20arm`, {
    method: 'POST',
    headers: auth,
    body: JSON.stringify({ a: 1 }),
  });
  assert.deepEqual(await ok.json(), { name: 'left arm', body: { a: 1 } });
  const bad = await fetch(`${d.http}/test/echo/x`, { method: 'POST', headers: auth, body: '{"a":' });
  assert.equal(bad.status, 400);
  assert.match(((await bad.json()) as any).error.message, /request body is not valid JSON/);
  const big = await fetch(`${d.http}/test/echo/x`, {
    method: 'POST',
    headers: auth,
    body: 'x'.repeat(d.config.server.max_message_bytes + 1),
  });
  assert.equal(big.status, 413);
  assert.match(((await big.json()) as any).error.message, /exceeds the limit of 4194304 bytes/);
  assert.equal((await fetch(`${d.http}/health`)).status, 200, 'still serving');
  assert.throws(
    () => d.routes.add({ method: 'POST', path: '/test/echo/:other', handler: () => undefined }),
    /already registered/,
  );
});

test('WebSocket system.info works with the token (query or header)', async () => {
  for (const header of [false, true]) {
    const c = await RpcTestClient.connect(d.ws, TEST_TOKEN, { header });
    const r = await c.call('system.info');
    assert.equal(r.result.name, 'brainstem');
    assert.match(r.result.version, /^\d+\.\d+\.\d+/);
    assert.equal(r.result.pid, process.pid);
    assert.deepEqual(r.result.mqtt.embedded, true);
    assert.equal(r.result.mqtt.base, 'brainstem');
    assert.ok(
      r.result.native.backends?.some((b: any) => b.name === 'cpu') ?? r.result.native.error,
      'native backends or the reason they are missing',
    );
    for (const m of ['system.info', 'system.health', 'system.subscribe', 'system.unsubscribe'])
      assert.ok(r.result.methods.includes(m), m);
    await c.close();
  }
});

test('WebSocket without the right token, or on another path, is refused before upgrade', async () => {
  assert.equal(await refusedStatus(d.ws), 401);
  assert.equal(await refusedStatus(`${d.ws}?token=wrong`), 401);
  assert.equal(await refusedStatus(d.ws, { authorization: 'Bearer wrong' }), 401);
  assert.equal(await refusedStatus(`${d.http.replace('http', 'ws')}/other?token=${TEST_TOKEN}`), 404);
});

test('system.health matches GET /health', async () => {
  const c = await RpcTestClient.connect(d.ws, TEST_TOKEN);
  const r = await c.call('system.health');
  const http = (await (await fetch(`${d.http}/health`, { headers: auth })).json()) as any;
  assert.equal(r.result.status, http.status);
  assert.deepEqual(Object.keys(r.result.services), Object.keys(http.services));
  await c.close();
});

test('system.subscribe streams telemetry notifications until unsubscribed', async () => {
  const c = await RpcTestClient.connect(d.ws, TEST_TOKEN);
  const sub = await c.call('system.subscribe', { interval_ms: 100 });
  assert.deepEqual(sub.result, {
    subscription: sub.result.subscription,
    interval_ms: 100,
    notification: 'system.telemetry',
  });
  const first = await c.nextNotification('system.telemetry');
  const index = c.notifications.indexOf(first);
  const second = await c.nextNotification('system.telemetry', index + 1);
  assert.equal(first.params.subscription, sub.result.subscription);
  assert.deepEqual([first.params.seq, second.params.seq], [0, 1]);
  assert.equal(first.params.health, 'ready');
  assert.ok(first.params.memory.rss_bytes > 0);
  assert.ok(first.params.event_loop.p99_ms >= 0);
  assert.equal(typeof first.params.cpu.process_percent, 'number');
  assert.deepEqual((await c.call('system.unsubscribe', { subscription: sub.result.subscription })).result, {
    unsubscribed: sub.result.subscription,
  });
  const again = await c.call('system.unsubscribe', { subscription: sub.result.subscription });
  assert.equal(again.error?.code, -32602);
  assert.equal(again.error?.data.field, 'subscription');
  const tooFast = await c.call('system.subscribe', { interval_ms: 5 });
  assert.equal(tooFast.error?.data.field, 'interval_ms');
  await c.close();
});

test('later parts can register methods that stream notifications', async () => {
  d.rpc.register('test.count', obj({ to: int({ min: 1, max: 5 }) }), ({ to }, ctx) => {
    for (let i = 1; i <= to; i++) ctx.notify('test.tick', { i });
    return { sent: to };
  });
  const c = await RpcTestClient.connect(d.ws, TEST_TOKEN);
  const r = await c.call('test.count', { to: 3 });
  assert.deepEqual(r.result, { sent: 3 });
  assert.deepEqual(
    c.notifications.map((n) => n.params.i),
    [1, 2, 3],
    'notifications arrive before the result',
  );
  await c.close();
});

test('a refused WebSocket upgrade whose client never closes its side does not hold the daemon’s stop', async () => {
  const own = await startTestDaemon();
  const { connect } = await import('node:net');
  const socket = connect({ port: Number(new URL(own.http).port), host: '127.0.0.1', allowHalfOpen: true });
  await new Promise((r) => socket.once('connect', r));
  const answer = new Promise<string>((r) => socket.once('data', (b) => r(b.toString())));
  socket.write(
    'GET /ws HTTP/1.1\r\nHost: localhost\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n',
  );
  assert.match(await answer, /^HTTP\/1\.1 401 Unauthorized/);
  // The client keeps its side open; the server's side is closed once its answer is out.
  const server = (own.api as unknown as { server: import('node:net').Server }).server;
  await waitFor(
    () => new Promise<true | undefined>((r) => server.getConnections((_e, n) => r(n === 0 ? true : undefined))),
    'the refused socket closed on the server',
  );
  await own.stop();
  socket.destroy();
});
