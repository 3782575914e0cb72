// One WebSocket client speaking JSON-RPC: runs requests concurrently, sends notifications,
// and cleans up its subscriptions when the socket closes. A bad message never closes it;
// an oversized one is cut off by ws (close code 1009) before it is buffered.
import { WebSocket, type RawData } from 'ws';
import type { Logger } from '../../log.js';
import type { Metrics } from '../metrics.js';
import { handleMessage } from './protocol.js';
import { RpcCode, type RpcContext, type RpcRegistry } from './registry.js';

export class RpcConnection implements RpcContext {
  private readonly abort = new AbortController();
  private readonly cleanups: (() => void)[] = [];

  constructor(
    readonly connectionId: string,
    private readonly ws: WebSocket,
    private readonly registry: RpcRegistry,
    private readonly metrics: Metrics,
    private readonly log: Logger,
  ) {
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

  notify(method: string, params: unknown): boolean {
    return this.send({ jsonrpc: '2.0', method, params });
  }

  onClose(fn: () => void): void {
    if (this.abort.signal.aborted) fn();
    else this.cleanups.push(fn);
  }

  private send(msg: unknown): boolean {
    if (this.ws.readyState !== WebSocket.OPEN) return false;
    this.ws.send(JSON.stringify(msg));
    return true;
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
    const hooks = {
      log: this.log,
      onOutcome: (m: string, known: boolean, outcome: string) => this.metrics.countRpc(m, known, outcome),
    };
    handleMessage(text, this.registry, this, hooks)
      .then((reply) => {
        if (reply !== undefined) this.send(reply);
      })
      .catch((err: unknown) => this.log.error({ conn: this.connectionId, err }, 'JSON-RPC dispatch failed'));
  }

  private closed(code: number): void {
    this.log.debug({ conn: this.connectionId, code }, 'WebSocket closed');
    this.metrics.wsConnections.dec();
    this.abort.abort();
    for (const fn of this.cleanups.splice(0)) {
      try {
        fn();
      } catch (err) {
        this.log.error({ conn: this.connectionId, err }, 'connection cleanup failed');
      }
    }
  }
}
