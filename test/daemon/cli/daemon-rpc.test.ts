// The CLI's daemon client never hangs and never crashes on what it is sent: a stale daemon.json,
// a listener that never answers, a garbage message, a call on a closed socket, a local close.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createServer, type Server, type Socket } from 'node:net';
import { WebSocketServer } from 'ws';
import { DaemonRpc } from '../../../daemon/cli/daemon-rpc.js';
import { CliError } from '../../../daemon/cli/exit.js';
import { loadConfig } from '../../../daemon/config/load.js';
import { writeRuntimeInfo } from '../../../daemon/runtime-file.js';
import { tempDir } from '../../helpers/temp.js';

type T = { after(fn: () => unknown): void };

/** A config whose data_dir holds a daemon.json naming `pid` and `ws`. */
function configWith(t: T, pid: number, ws: string) {
  const dir = tempDir();
  t.after(() => dir.remove());
  const config = loadConfig({ env: {}, overrides: { data_dir: dir.path, server: { token: 'test-token' } } });
  writeRuntimeInfo(dir.path, {
    pid,
    version: 'test',
    started_at: new Date(0).toISOString(),
    http: 'http://127.0.0.1:1',
    ws,
    mqtt: null,
    mqtt_embedded: false,
  });
  return config;
}

async function listening(t: T, server: Server | WebSocketServer): Promise<number> {
  await new Promise<void>((r) => server.once('listening', () => r()));
  t.after(() => new Promise((r) => server.close(() => r(undefined))));
  return (server.address() as { port: number }).port;
}

async function rejection(p: Promise<unknown>): Promise<CliError> {
  const err = await p.then(
    () => assert.fail('expected a rejection'),
    (e: unknown) => e,
  );
  assert.ok(err instanceof CliError, String(err));
  return err;
}

test('a daemon.json whose pid is not running is reported as stale, not dialled', { timeout: 5000 }, async (t) => {
  const dead = spawnSync(process.execPath, ['-e', '']).pid!;
  const config = configWith(t, dead, 'ws://127.0.0.1:1/');
  const err = await rejection(DaemonRpc.connect(config, () => undefined));
  assert.match(err.message, new RegExp(`daemon\\.json names pid ${dead}, which is not running; start the daemon`));
});

test('a listener that accepts and never answers is an error after the timeout', { timeout: 5000 }, async (t) => {
  const sockets: Socket[] = [];
  const server = createServer((s) => sockets.push(s)).listen(0, '127.0.0.1');
  t.after(() => sockets.forEach((s) => s.destroy()));
  const port = await listening(t, server);
  const config = configWith(t, process.pid, `ws://127.0.0.1:${port}/`);
  const started = Date.now();
  const err = await rejection(DaemonRpc.connect(config, () => undefined, { timeoutMs: 200 }));
  assert.match(err.message, /did not answer within 0\.2 s/);
  assert.ok(Date.now() - started < 5000);
});

test('non-JSON and non-object messages are reported and ignored; the next reply still arrives', {
  timeout: 5000,
}, async (t) => {
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0 });
  wss.on('connection', (ws) =>
    ws.on('message', (data) => {
      const { id } = JSON.parse(data.toString()) as { id: number };
      ws.send('not json{');
      ws.send('null');
      ws.send(JSON.stringify({ jsonrpc: '2.0', id, result: 'ok' }));
    }),
  );
  const port = await listening(t, wss);
  const warnings: string[] = [];
  const rpc = await DaemonRpc.connect(configWith(t, process.pid, `ws://127.0.0.1:${port}/`), () => undefined, {
    onWarning: (w) => warnings.push(w),
  });
  assert.equal(await rpc.call('system.ping', {}), 'ok');
  assert.deepEqual(warnings, [
    'ignored a message from the daemon that is not JSON',
    'ignored a message from the daemon that is not a JSON-RPC object',
  ]);
  await rpc.close();
});

test('a call after the daemon closed the socket rejects at once; a local close fails pending calls with its reason', {
  timeout: 5000,
}, async (t) => {
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0 });
  const port = await listening(t, wss);
  const config = configWith(t, process.pid, `ws://127.0.0.1:${port}/`);

  wss.once('connection', (ws) => ws.close());
  const first = await DaemonRpc.connect(config, () => undefined);
  await first.closed;
  const err = await rejection(first.call('system.ping', {}));
  assert.match(err.message, /cannot call system\.ping: the connection to the daemon is closed/);

  const second = await DaemonRpc.connect(config, () => undefined);
  const pending = second.call('policy.start', {}); // never answered
  const interrupted = new CliError('interrupted (Ctrl-C)', 130);
  await second.close(interrupted);
  assert.equal(await rejection(pending), interrupted);
});
