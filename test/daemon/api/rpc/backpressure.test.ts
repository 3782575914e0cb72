// Per-connection backpressure: a client whose replies pile up unsent, or whose messages wait
// unanswered, is not read (socket paused) until they drain, and is disconnected with 1008 past the
// hard bound; across clients the one holding the most goes first past the daemon-wide bound. A
// fake socket stands in for ws so the unsent byte count is exact.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { pino } from 'pino';
import { WebSocket } from 'ws';
import { Metrics } from '../../../../daemon/api/metrics.js';
import { ServerBacklog } from '../../../../daemon/api/rpc/backlog.js';
import { CLOSE_BACKLOG, RpcConnection } from '../../../../daemon/api/rpc/connection.js';
import { LoopShare } from '../../../../daemon/api/rpc/loop-share.js';
import { RpcRegistry } from '../../../../daemon/api/rpc/registry.js';
import { SubscriptionBudget } from '../../../../daemon/api/rpc/subscriptions.js';
import { int, obj, str } from '../../../../robot/common/validation/builders.js';

/** A socket that never writes anything out until `flush()`, like a client that does not read. */
class StuckSocket extends EventEmitter {
  readyState: number = WebSocket.OPEN;
  bufferedAmount = 0;
  paused = false;
  closedWith?: [number, string];
  terminated = false;
  private readonly queue: [number, () => void][] = [];
  send(data: string | Buffer, _opts: { binary: boolean }, cb: () => void): void {
    this.bufferedAmount += Buffer.byteLength(data);
    this.queue.push([Buffer.byteLength(data), cb]);
  }
  pause(): void {
    this.paused = true;
  }
  resume(): void {
    this.paused = false;
  }
  close(code: number, reason: string): void {
    this.closedWith = [code, reason];
    this.readyState = WebSocket.CLOSING;
  }
  terminate(): void {
    this.terminated = true;
  }
  /** The client reads `n` replies. */
  flush(n: number): void {
    for (const [bytes, cb] of this.queue.splice(0, n)) {
      this.bufferedAmount -= bytes;
      cb();
    }
  }
  /** The client sends one text message. */
  async deliver(msg: unknown): Promise<void> {
    this.emit('message', Buffer.from(JSON.stringify(msg)), false);
    await new Promise((r) => setImmediate(r));
  }
}

/** Calls to test.wait finish when the test opens the gate. */
let openGate: () => void = () => undefined;
let gate = Promise.resolve();
function closeGate(): void {
  gate = new Promise((resolve) => {
    openGate = resolve;
  });
}

function connect(
  limits = { pauseBytes: 2000, maxBufferedBytes: 10_000 },
  backlog = new ServerBacklog(1 << 30),
  id = 'c1',
) {
  const rpc = new RpcRegistry();
  rpc.register('test.blob', obj({ n: int({ min: 0, max: 100_000 }) }), (p) => 'x'.repeat(p.n));
  rpc.register('test.wait', obj({ pad: str({ default: '' }) }), async () => {
    await gate;
    return 'ok';
  });
  const ws = new StuckSocket();
  const conn = new RpcConnection(id, ws as unknown as WebSocket, rpc, new Metrics(), pino({ level: 'silent' }), {
    maxBatch: 1000,
    maxDepth: 64,
    share: new LoopShare(),
    backlog,
    subscriptions: new SubscriptionBudget(16, 256),
    ...limits,
  });
  return { ws, conn };
}

const blob = (id: number, n: number) => ({ jsonrpc: '2.0', id, method: 'test.blob', params: { n } });

test('the socket is paused while unsent replies exceed ws_pause_bytes and resumed once they drain', async () => {
  const { ws, conn } = connect();
  await ws.deliver(blob(1, 1500));
  assert.equal(ws.paused, false, 'under the bound: still reading');
  await ws.deliver(blob(2, 1500));
  assert.equal(ws.paused, true, 'over the bound: not read');
  assert.equal(conn.isPaused, true);
  ws.flush(1);
  assert.equal(ws.paused, false, 'drained under the bound: reading again');
  assert.equal(ws.closedWith, undefined);
});

test('past ws_max_buffered_bytes the client is closed with 1008 naming the limit, then cut off', async (t) => {
  t.mock.timers.enable({ apis: ['setTimeout'] });
  const { ws, conn } = connect();
  await ws.deliver(blob(1, 9000));
  assert.equal(ws.closedWith, undefined);
  // Replies already under way (and notifications) still count: one more passes the hard bound.
  assert.equal(conn.notify('test.event', { big: 'y'.repeat(2000) }), true);
  assert.deepEqual(ws.closedWith, [CLOSE_BACKLOG, 'unsent replies exceed server.ws_max_buffered_bytes (10000)']);
  assert.ok(Buffer.byteLength(ws.closedWith![1]) <= 123, 'fits a close frame');
  assert.equal(conn.notify('test.event', {}), false, 'nothing more is queued');
  assert.equal(ws.terminated, false);
  t.mock.timers.tick(1000);
  assert.equal(ws.terminated, true, 'a client that cannot read the close frame is cut off');
});

test('messages waiting unanswered past ws_pause_bytes pause reading until they are answered', async () => {
  closeGate();
  const { ws, conn } = connect();
  const wait = (id: number) => ({ jsonrpc: '2.0', id, method: 'test.wait', params: { pad: 'p'.repeat(900) } });
  await ws.deliver(wait(1));
  await ws.deliver(wait(2));
  assert.equal(ws.paused, false, 'about 1.9 kB unanswered: still reading');
  await ws.deliver(wait(3));
  assert.equal(ws.paused, true, 'past 2000 bytes unanswered: not read');
  assert.ok(conn.backlogBytes > 2000);
  openGate();
  await new Promise((r) => setImmediate(r));
  await new Promise((r) => setImmediate(r));
  assert.equal(ws.paused, false, 'answered: reading again');
  ws.flush(3);
  assert.equal(conn.backlogBytes, 0, 'nothing held once the replies are written');
});

test('past ws_total_buffered_bytes across clients the client holding the most is disconnected', async () => {
  const backlog = new ServerBacklog(5000);
  const limits = { pauseBytes: 10_000, maxBufferedBytes: 20_000 };
  const a = connect(limits, backlog, 'a');
  const b = connect(limits, backlog, 'b');
  await b.ws.deliver(blob(1, 1500));
  await a.ws.deliver(blob(1, 3000));
  assert.equal(a.ws.closedWith, undefined, 'about 4.6 kB in all: under the bound');
  await b.ws.deliver(blob(2, 1000));
  assert.deepEqual(a.ws.closedWith, [
    CLOSE_BACKLOG,
    'backlog exceeds server.ws_total_buffered_bytes (5000) across clients',
  ]);
  assert.equal(b.ws.closedWith, undefined, 'the smaller holder stays');
  assert.ok(backlog.bytes <= 5000 && backlog.bytes === b.conn.backlogBytes, `total ${backlog.bytes}`);
  a.ws.emit('close', CLOSE_BACKLOG);
  a.ws.flush(1);
  assert.equal(backlog.bytes, b.conn.backlogBytes, 'a closed client leaves nothing counted');
  b.ws.flush(2);
  assert.equal(backlog.bytes, 0);
});

test('a client runs one batch at a time: its next batch starts once the previous one has replied', async () => {
  closeGate();
  const { ws } = connect();
  const waiting = [1, 2].map((id) => ({ jsonrpc: '2.0', id, method: 'test.wait', params: {} }));
  await ws.deliver(waiting);
  await ws.deliver([blob(3, 10)]);
  await ws.deliver(blob(4, 10));
  const sent = () => ws.bufferedAmount;
  const single = sent();
  const one = JSON.stringify({ jsonrpc: '2.0', id: 4, result: 'x'.repeat(10) }).length;
  assert.equal(single, one, 'only the single call replied: the second batch waits for the first');
  openGate();
  for (let i = 0; i < 4; i++) await new Promise((r) => setImmediate(r));
  assert.ok(sent() > single + 80, `both batches replied in the end (${sent()} bytes)`);
});
