// Bad input over the real transports: each gets a clear error and the daemon keeps serving.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readBody } from '../../../daemon/api/http.js';
import { startTestDaemon, TEST_TOKEN, type TestDaemon } from '../../helpers/daemon.js';
import { RpcTestClient } from '../../helpers/rpc.js';

let d: TestDaemon;
let bystander: RpcTestClient;
before(async () => {
  d = await startTestDaemon();
  bystander = await RpcTestClient.connect(d.ws, TEST_TOKEN);
});
after(async () => {
  await bystander.close();
  await d.stop();
});

async function stillServes(c: RpcTestClient) {
  const r = await c.call('system.info');
  assert.equal(r.result?.name, 'brainstem', 'the connection still answers');
}

test('malformed JSON-RPC gets -32700 and the connection stays usable', async () => {
  const c = await RpcTestClient.connect(d.ws, TEST_TOKEN);
  const r = await c.sendRaw('{"jsonrpc":"2.0","id":1,"method":"system.info"');
  assert.equal(r.error.code, -32700);
  assert.equal(r.id, null);
  const inv = await c.sendRaw('{"jsonrpc":"2.0","id":2}');
  assert.equal(inv.error.code, -32600);
  assert.equal(inv.error.data.field, 'method');
  const bin = await c.sendRaw(Buffer.from([0xff, 0x00]));
  assert.equal(bin.error.code, -32600);
  assert.match(bin.error.message, /binary frames/);
  await stillServes(c);
  await c.close();
});

test('an unknown method gets -32601 naming it', async () => {
  const c = await RpcTestClient.connect(d.ws, TEST_TOKEN);
  const r = await c.call('system.reboot');
  assert.deepEqual(r.error, {
    code: -32601,
    message: 'Method not found: system.reboot',
    data: { method: 'system.reboot' },
  });
  await stillServes(c);
  await c.close();
});

test('wrong param types get -32602 naming the field, rule and value', async () => {
  const c = await RpcTestClient.connect(d.ws, TEST_TOKEN);
  const r = await c.call('system.subscribe', { interval_ms: 'often' });
  assert.equal(r.error?.code, -32602);
  assert.equal(r.error?.message, 'Invalid params: interval_ms: must be an integer in 100..3600000, got "often"');
  assert.equal(r.error?.data.field, 'interval_ms');
  const extra = await c.call('system.info', { verbose: true });
  assert.equal(extra.error?.code, -32602);
  assert.match(extra.error!.message, /verbose: is not a known key/);
  await stillServes(c);
  await c.close();
});

test('a 10 MB message closes only that connection (1009) without being buffered', async () => {
  const c = await RpcTestClient.connect(d.ws, TEST_TOKEN);
  const huge = JSON.stringify({
    jsonrpc: '2.0',
    id: 1,
    method: 'system.info',
    params: { pad: 'x'.repeat(10_000_000) },
  });
  c.ws.send(huge);
  const closed = await c.closed;
  assert.equal(closed.code, 1009, `close code ${closed.code} ${closed.reason}`);
  await stillServes(bystander);
  const fresh = await RpcTestClient.connect(d.ws, TEST_TOKEN);
  await stillServes(fresh);
  await fresh.close();
  assert.equal((await fetch(`${d.http}/health`)).status, 200);
});

test('a 10 MB HTTP body is refused with 413 and the server keeps serving', async () => {
  d.routes.add({
    method: 'POST',
    path: '/test/upload',
    handler: async (req, res, ctx) => void res.end(String((await readBody(req, ctx.maxBodyBytes)).length)),
  });
  const big = await fetch(`${d.http}/test/upload`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TEST_TOKEN}` },
    body: new Uint8Array(10_000_000),
  });
  assert.equal(big.status, 413);
  await stillServes(bystander);
});

test('a chunked body without Content-Length is cut off at the limit with 413', async () => {
  const chunk = new Uint8Array(1 << 20);
  let sent = 0;
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (sent++ < 10) controller.enqueue(chunk);
      else controller.close();
    },
  });
  const r = await fetch(`${d.http}/test/upload`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TEST_TOKEN}` },
    body,
    duplex: 'half',
  } as RequestInit);
  assert.equal(r.status, 413);
  assert.match(((await r.json()) as any).error.message, /exceeds the limit of 4194304 bytes/);
  await stillServes(bystander);
});

/** Sends raw bytes to the API port and returns the status line of the reply. */
async function rawStatus(request: string): Promise<string> {
  const { connect } = await import('node:net');
  const port = Number(new URL(d.http).port);
  return new Promise((resolve, reject) => {
    const s = connect(port, '127.0.0.1', () => s.write(request));
    let got = '';
    s.on('data', (b) => {
      got += b.toString();
      if (got.includes('\r\n')) {
        resolve(got.split('\r\n')[0]!);
        s.destroy();
      }
    });
    s.on('error', reject);
  });
}

test('request targets that URL parsing refuses ("//", "*") get an answer, and the daemon keeps serving', async () => {
  // "//" once threw in the upgrade listener (uncaught: the daemon stopped) and hung plain requests.
  const upgrade =
    'Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n';
  assert.equal(await rawStatus(`GET // HTTP/1.1\r\nHost: localhost\r\n${upgrade}\r\n`), 'HTTP/1.1 401 Unauthorized');
  // The router reads "//" as "/" (the public console page).
  assert.equal(await rawStatus('GET // HTTP/1.1\r\nHost: localhost\r\n\r\n'), 'HTTP/1.1 200 OK');
  assert.equal(await rawStatus('OPTIONS * HTTP/1.1\r\nHost: localhost\r\n\r\n'), 'HTTP/1.1 400 Bad Request');
  assert.equal(await rawStatus(`GET * HTTP/1.1\r\nHost: localhost\r\n${upgrade}\r\n`), 'HTTP/1.1 400 Bad Request');
  await stillServes(bystander);
});
