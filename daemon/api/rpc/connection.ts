// One WebSocket client speaking JSON-RPC: runs requests concurrently, sends notifications,
// and cleans up its subscriptions when the socket closes. A bad message never closes it;
// an oversized one is cut off by ws (close code 1009) before it is buffered. A client that
// does not read its replies is paused, then disconnected, so its backlog stays bounded.
import { WebSocket, type RawData } from 'ws';
import type { Logger } from '../../log.js';
import type { Metrics } from '../metrics.js';
import type { LoopShare } from './loop-share.js';
import { handleMessage, type DispatchHooks, type MessageLimits } from './protocol.js';
import { RpcCode, type RpcContext, type RpcRegistry } from './registry.js';

export interface ConnectionLimits extends MessageLimits {
  /** Unsent bytes above which the socket is not read (server.ws_pause_bytes). */
  pauseBytes: number;
  /** Unsent bytes above which the client is disconnected (server.ws_max_buffered_bytes). */
  maxBufferedBytes: number;
  /** The loop-turn budget shared by all connections. */
  share: LoopShare;
}

/** Policy violation: the client does not read its replies. */
export const CLOSE_BACKLOG = 1008;
/** How long a client closed for its backlog may take to read the close frame. */
const CLOSE_GRACE_MS = 1000;

export class RpcConnection implements RpcContext {
  private readonly abort = new AbortController();
  private readonly cleanups: (() => void)[] = [];
  private readonly hooks: DispatchHooks;
  private paused = false;
  private closing = false;
  /** Wakes the work that waits while the socket is paused (on resume or close). */
  private readonly sleepers: (() => void)[] = [];

  constructor(
    readonly connectionId: string,
    private readonly ws: WebSocket,
    private readonly registry: RpcRegistry,
    private readonly metrics: Metrics,
    private readonly log: Logger,
    private readonly limits: ConnectionLimits,
  ) {
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
  }

  get signal(): AbortSignal {
    return this.abort.signal;
  }

  get bufferedAmount(): number {
    return this.ws.bufferedAmount;
  }

  /** True while the socket is not read because replies are waiting to be sent. */
  get isPaused(): boolean {
    return this.paused;
  }

  notify(method: string, params: unknown): boolean {
    return this.send({ jsonrpc: '2.0', method, params });
  }

  sendBinary(data: Buffer): boolean {
    if (this.ws.readyState !== WebSocket.OPEN || this.closing) return false;
    this.ws.send(data, { binary: true }, () => this.maybeResume());
    this.checkBacklog();
    return true;
  }

  onClose(fn: () => void): void {
    if (this.abort.signal.aborted) fn();
    else this.cleanups.push(fn);
  }

  private send(msg: unknown): boolean {
    if (this.ws.readyState !== WebSocket.OPEN || this.closing) return false;
    this.ws.send(JSON.stringify(msg), () => this.maybeResume());
    this.checkBacklog();
    return true;
  }

  /**
   * Lets the next message start: not while replies pile up unsent (it would grow the backlog past
   * the pause), and only within the turn budget shared with the other connections. A batch already
   * started runs on: its finished calls' results are held until it replies.
   */
  private async admit(): Promise<void> {
    while (this.paused && !this.abort.signal.aborted) await new Promise<void>((resolve) => this.sleepers.push(resolve));
    await this.limits.share.take(this);
  }

  private checkBacklog(): void {
    const unsent = this.ws.bufferedAmount;
    if (unsent > this.limits.maxBufferedBytes) {
      this.closing = true;
      this.log.warn({ conn: this.connectionId, unsent }, 'WebSocket client does not read its replies: disconnecting');
      // The reason must fit a close frame (123 bytes).
      this.ws.close(
        CLOSE_BACKLOG,
        `unsent replies exceed server.ws_max_buffered_bytes (${this.limits.maxBufferedBytes})`,
      );
      setTimeout(() => this.ws.terminate(), CLOSE_GRACE_MS).unref();
    } else if (unsent > this.limits.pauseBytes && !this.paused) {
      this.paused = true;
      this.ws.pause();
    }
  }

  /** Called as each reply is written out: reading resumes once the backlog is under the bound. */
  private maybeResume(): void {
    if (this.paused && !this.closing && this.ws.bufferedAmount <= this.limits.pauseBytes) {
      this.paused = false;
      this.ws.resume();
      for (const wake of this.sleepers.splice(0)) wake();
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
    const text = Array.isArray(data)
      ? Buffer.concat(data).toString('utf8')
      : Buffer.from(data as ArrayBuffer).toString('utf8');
    this.admit()
      .then(() => (this.abort.signal.aborted ? undefined : handleMessage(text, this.registry, this, this.hooks)))
      .then((reply) => {
        if (reply !== undefined) this.send(reply);
      })
      .catch((err: unknown) => this.log.error({ conn: this.connectionId, err }, 'JSON-RPC dispatch failed'));
  }

  private closed(code: number): void {
    this.log.debug({ conn: this.connectionId, code }, 'WebSocket closed');
    this.metrics.wsConnections.dec();
    this.abort.abort();
    for (const wake of this.sleepers.splice(0)) wake();
    for (const fn of this.cleanups.splice(0)) {
      try {
        fn();
      } catch (err) {
        this.log.error({ conn: this.connectionId, err }, 'connection cleanup failed');
      }
    }
  }
}
