// One WebSocket client speaking JSON-RPC: runs requests concurrently, sends notifications,
// and cleans up its subscriptions when the socket closes. A bad message never closes it;
// an oversized one is cut off by ws (close code 1009) before it is buffered. A client that
// does not read its replies, or whose messages pile up unanswered, is paused, then disconnected,
// so its backlog stays bounded; ServerBacklog bounds the sum over all clients.
import { WebSocket, type RawData } from 'ws';
import type { Logger } from '../../log.js';
import type { Metrics } from '../metrics.js';
import type { BacklogHolder, ServerBacklog } from './backlog.js';
import type { LoopShare } from './loop-share.js';
import { handleMessage, type DispatchHooks, type MessageLimits } from './protocol.js';
import { RpcCode, RpcError, type RpcContext, type RpcRegistry } from './registry.js';
import { ConnectionHooks, type SubscriptionBudget } from './subscriptions.js';

export interface ConnectionLimits extends MessageLimits {
  /** Unsent or unanswered bytes above which the socket is not read (server.ws_pause_bytes). */
  pauseBytes: number;
  /** Unsent bytes above which the client is disconnected (server.ws_max_buffered_bytes). */
  maxBufferedBytes: number;
  /** The loop-turn budget shared by all connections. */
  share: LoopShare;
  /** The backlog of all connections (server.ws_total_buffered_bytes). */
  backlog: ServerBacklog;
  /** Live subscriptions of all connections (server.max_subscriptions, server.max_subscriptions_total). */
  subscriptions: SubscriptionBudget;
}

/** Policy violation: the client does not read its replies. */
export const CLOSE_BACKLOG = 1008;
/** How long a client closed for its backlog may take to read the close frame. */
const CLOSE_GRACE_MS = 1000;

export class RpcConnection implements RpcContext, BacklogHolder {
  private readonly abort = new AbortController();
  private readonly cleanups: ConnectionHooks;
  private readonly hooks: DispatchHooks;
  private paused = false;
  private closing = false;
  /** Received message bytes not yet answered, and reply bytes not yet written out. */
  private inBytes = 0;
  private outBytes = 0;
  private tracked = true;
  /** Wakes the work that waits while the socket is paused (on resume or close). */
  private readonly sleepers: (() => void)[] = [];
  /** One batch runs at a time per client: a started batch holds every result until it replies. */
  private batchRunning = false;
  private readonly batchWaiters: (() => void)[] = [];

  constructor(
    readonly connectionId: string,
    private readonly ws: WebSocket,
    private readonly registry: RpcRegistry,
    private readonly metrics: Metrics,
    private readonly log: Logger,
    private readonly limits: ConnectionLimits,
  ) {
    this.cleanups = new ConnectionHooks(limits.subscriptions);
    this.hooks = {
      log,
      limits,
      yieldToLoop: (calls) => this.limits.share.take(this, calls),
      onOutcome: (m: string, known: boolean, outcome: string) => this.metrics.countRpc(m, known, outcome),
    };
    ws.on('message', (data, isBinary) => this.onMessage(data, isBinary));
    ws.on('error', (err) => this.log.warn({ conn: connectionId, err: err.message }, 'WebSocket error'));
    ws.once('close', (code) => this.closed(code));
    metrics.wsConnections.inc();
    limits.backlog.add(this);
  }

  get signal(): AbortSignal {
    return this.abort.signal;
  }

  get bufferedAmount(): number {
    return this.ws.bufferedAmount;
  }

  get backlogBytes(): number {
    return this.inBytes + this.outBytes;
  }

  /** True while the socket is not read because replies are waiting to be sent or messages to run. */
  get isPaused(): boolean {
    return this.paused;
  }

  notify(method: string, params: unknown): boolean {
    return this.send({ jsonrpc: '2.0', method, params });
  }

  sendBinary(data: Buffer): boolean {
    return this.write(data, true);
  }

  onClose(fn: () => void): () => void {
    if (!this.abort.signal.aborted) return this.cleanups.add(fn);
    fn();
    return () => undefined;
  }

  subscribe(stop: () => void): () => void {
    // A call that ran on after the close: nothing would end the subscription.
    if (this.abort.signal.aborted)
      throw new RpcError(RpcCode.INVALID_REQUEST, 'Invalid Request: the connection closed');
    return this.cleanups.subscribe(stop);
  }

  private send(msg: unknown): boolean {
    return this.write(JSON.stringify(msg), false);
  }

  /** One text or binary message (a Buffer may hold UTF-8 text), counted as unsent until ws has written it out. */
  private write(data: string | Buffer, binary: boolean): boolean {
    if (this.ws.readyState !== WebSocket.OPEN || this.closing) return false;
    const bytes = typeof data === 'string' ? Buffer.byteLength(data) : data.length;
    this.countOut(bytes);
    this.ws.send(data, { binary }, () => {
      this.countOut(-bytes);
      this.maybeResume();
    });
    this.checkBacklog();
    return true;
  }

  /**
   * Lets the next message start: not while replies pile up unsent (it would grow the backlog past
   * the pause), a batch only once the client's previous batch has replied (its results are held
   * until then: at most server.max_batch_calls results per client), and only within the turn budget
   * shared with the other connections. A batch already started runs on.
   */
  private async admit(batch: boolean): Promise<void> {
    while (this.ws.bufferedAmount > this.limits.pauseBytes && !this.abort.signal.aborted)
      await new Promise<void>((resolve) => this.sleepers.push(resolve));
    if (batch) {
      while (this.batchRunning && !this.abort.signal.aborted)
        await new Promise<void>((resolve) => this.batchWaiters.push(resolve));
      this.batchRunning = true;
    }
    await this.limits.share.take(this);
  }

  private batchDone(): void {
    this.batchRunning = false;
    this.batchWaiters.shift()?.();
  }

  private countIn(bytes: number): void {
    this.inBytes += bytes;
    this.count(bytes);
  }

  private countOut(bytes: number): void {
    this.outBytes += bytes;
    this.count(bytes);
  }

  private count(bytes: number): void {
    if (!this.tracked) return;
    if (bytes > 0) this.limits.backlog.grow(bytes);
    else this.limits.backlog.shrink(-bytes);
  }

  dropForBacklog(reason: string): void {
    this.tracked = false;
    this.disconnect(reason, { unsent: this.outBytes, unanswered: this.inBytes });
  }

  private disconnect(reason: string, detail: Record<string, number>): void {
    if (this.closing) return;
    this.closing = true;
    this.log.warn({ conn: this.connectionId, ...detail }, `WebSocket client disconnected: ${reason}`);
    // The reason must fit a close frame (123 bytes).
    this.ws.close(CLOSE_BACKLOG, reason);
    setTimeout(() => this.ws.terminate(), CLOSE_GRACE_MS).unref();
  }

  private checkBacklog(): void {
    const unsent = this.ws.bufferedAmount;
    if (unsent > this.limits.maxBufferedBytes)
      this.disconnect(`unsent replies exceed server.ws_max_buffered_bytes (${this.limits.maxBufferedBytes})`, {
        unsent,
      });
    else if ((unsent > this.limits.pauseBytes || this.inBytes > this.limits.pauseBytes) && !this.paused) {
      this.paused = true;
      this.ws.pause();
    }
  }

  /** Called as each reply is written out or message answered: reading resumes once both backlogs are under the bound. */
  private maybeResume(): void {
    if (this.ws.bufferedAmount <= this.limits.pauseBytes) for (const wake of this.sleepers.splice(0)) wake();
    if (
      this.paused &&
      !this.closing &&
      this.ws.bufferedAmount <= this.limits.pauseBytes &&
      this.inBytes <= this.limits.pauseBytes
    ) {
      this.paused = false;
      this.ws.resume();
    }
  }

  private onMessage(data: RawData, isBinary: boolean): void {
    if (isBinary) {
      this.send({
        jsonrpc: '2.0',
        id: null,
        error: {
          code: RpcCode.INVALID_REQUEST,
          message: 'Invalid Request: binary frames are not accepted; send JSON text',
        },
      });
      return;
    }
    // A copy: a slice of ws's read buffer would hold the whole chunk while the message waits.
    let held: Buffer | undefined = Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data as ArrayBuffer);
    const bytes = held.length;
    this.countIn(bytes);
    this.checkBacklog();
    const batch = startsArray(held);
    this.admit(batch)
      .then(() => {
        // Decoded only once admitted: a waiting message stays bytes outside the JS heap, not a string the collector scans.
        const text = held!.toString('utf8');
        held = undefined;
        return this.abort.signal.aborted ? undefined : handleMessage(text, this.registry, this, this.hooks);
      })
      .then((reply) => {
        if (Buffer.isBuffer(reply)) this.write(reply, false);
        else if (reply !== undefined) this.send(reply);
      })
      .catch((err: unknown) => this.log.error({ conn: this.connectionId, err }, 'JSON-RPC dispatch failed'))
      .finally(() => {
        if (batch) this.batchDone();
        this.countIn(-bytes);
        this.maybeResume();
      });
  }

  private closed(code: number): void {
    this.log.debug({ conn: this.connectionId, code }, 'WebSocket closed');
    this.metrics.wsConnections.dec();
    if (this.tracked) this.limits.backlog.remove(this, this.backlogBytes);
    this.tracked = false;
    this.abort.abort();
    for (const wake of [...this.sleepers.splice(0), ...this.batchWaiters.splice(0)]) wake();
    this.cleanups.close((err) => this.log.error({ conn: this.connectionId, err }, 'connection cleanup failed'));
  }
}

/** True when the first byte that is not JSON whitespace opens an array (a batch). */
function startsArray(b: Buffer): boolean {
  for (const c of b) if (c !== 0x20 && c !== 0x09 && c !== 0x0a && c !== 0x0d) return c === 0x5b;
  return false;
}
