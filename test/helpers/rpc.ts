// A JSON-RPC 2.0 WebSocket test client: calls by id, raw frames, and notification waiting.
import { WebSocket, type ClientOptions } from 'ws';
import type { RpcContext } from '../../daemon/api/rpc/registry.js';
import { ConnectionHooks, SubscriptionBudget } from '../../daemon/api/rpc/subscriptions.js';
import { waitFor, within } from './wait.js';

export interface RpcReply {
  jsonrpc: '2.0';
  id: string | number | null;
  result?: any;
  error?: { code: number; message: string; data?: any };
}

export interface RpcNotification {
  jsonrpc: '2.0';
  method: string;
  params: any;
}

export class RpcTestClient {
  private nextId = 1;
  private readonly pending = new Map<string | number, (r: RpcReply) => void>();
  /** Replies without a known id (id null, batches), in arrival order. */
  readonly unmatched: unknown[] = [];
  readonly notifications: RpcNotification[] = [];
  /** Binary messages (robots.frame format binary), in arrival order. */
  readonly binaries: Buffer[] = [];
  private waiters: (() => void)[] = [];
  readonly closed: Promise<{ code: number; reason: string }>;

  private constructor(readonly ws: WebSocket) {
    ws.on('message', (data, isBinary) => {
      if (isBinary) this.binaries.push(Buffer.from(data as Buffer));
      else this.onMessage(data.toString());
    });
    this.closed = new Promise((resolve) =>
      ws.once('close', (code, reason) => resolve({ code, reason: reason.toString() })),
    );
  }

  /** Opens ws://.../ws with `?token=` (or a Bearer header with `header: true`); `ws` passes client options. */
  static async connect(
    wsUrl: string,
    token?: string,
    opts: { header?: boolean; ws?: ClientOptions } = {},
  ): Promise<RpcTestClient> {
    const url = token && !opts.header ? `${wsUrl}?token=${encodeURIComponent(token)}` : wsUrl;
    const headers = token && opts.header ? { authorization: `Bearer ${token}` } : undefined;
    const ws = new WebSocket(url, { ...opts.ws, ...(headers ? { headers } : {}) });
    await within(
      new Promise<void>((resolve, reject) => {
        ws.once('open', () => resolve());
        ws.once('error', reject);
      }),
      10_000,
      `WebSocket open ${wsUrl}`,
    );
    return new RpcTestClient(ws);
  }

  private onMessage(text: string): void {
    const msg = JSON.parse(text);
    if (!Array.isArray(msg) && msg.method !== undefined && msg.id === undefined) this.notifications.push(msg);
    else if (!Array.isArray(msg) && msg.id !== null && this.pending.has(msg.id)) {
      this.pending.get(msg.id)!(msg);
      this.pending.delete(msg.id);
    } else this.unmatched.push(msg);
    for (const w of this.waiters.splice(0)) w();
  }

  /** Sends a request and resolves with the whole reply (result or error). */
  call(method: string, params?: unknown, timeoutMs = 10_000): Promise<RpcReply> {
    const id = this.nextId++;
    const reply = new Promise<RpcReply>((resolve) => this.pending.set(id, resolve));
    this.ws.send(JSON.stringify({ jsonrpc: '2.0', id, method, ...(params === undefined ? {} : { params }) }));
    return within(reply, timeoutMs, `reply to ${method}`);
  }

  /** Sends raw text and waits for the next reply that no call() is waiting for. */
  async sendRaw(text: string | Buffer, timeoutMs = 10_000): Promise<any> {
    const before = this.unmatched.length;
    this.ws.send(text);
    await this.until(() => this.unmatched.length > before, timeoutMs, 'a reply to a raw frame');
    return this.unmatched[before];
  }

  async nextNotification(method: string, after = 0, timeoutMs = 10_000): Promise<RpcNotification> {
    const find = () => this.notifications.slice(after).find((n) => n.method === method);
    await this.until(() => find() !== undefined, timeoutMs, `a ${method} notification`);
    return find()!;
  }

  private until(cond: () => boolean, timeoutMs: number, what: string): Promise<void> {
    if (cond()) return Promise.resolve();
    return within(
      new Promise<void>((resolve) => {
        const check = () => (cond() ? resolve() : this.waiters.push(check));
        this.waiters.push(check);
      }),
      timeoutMs,
      what,
    );
  }

  close(): Promise<unknown> {
    if (this.ws.readyState === WebSocket.OPEN || this.ws.readyState === WebSocket.CONNECTING) this.ws.close();
    return this.closed;
  }
}

/** Tries to open a WebSocket and resolves with the HTTP status the server refused it with. */
export function refusedStatus(url: string, headers: Record<string, string> = {}): Promise<number> {
  return within(
    new Promise<number>((resolve, reject) => {
      const ws = new WebSocket(url, { headers });
      ws.once('unexpected-response', (_req, res) => {
        resolve(res.statusCode ?? 0);
        ws.terminate();
      });
      ws.once('open', () => {
        ws.close();
        reject(new Error(`WebSocket ${url} was accepted`));
      });
      ws.once('error', () => undefined);
    }),
    10_000,
    `WebSocket refusal from ${url}`,
  );
}

/** handleMessage's reply as JSON values: a batch comes back as its serialized array. */
export const parsed = (reply: unknown): unknown =>
  Buffer.isBuffer(reply) ? JSON.parse(reply.toString('utf8')) : reply;

/** A connection context for calling handleMessage without a socket; its close hooks are `hooks`. */
export function testRpcContext(
  hooks = new ConnectionHooks(new SubscriptionBudget(16, 256)),
  notify: RpcContext['notify'] = () => true,
): RpcContext {
  return {
    connectionId: 't',
    notify,
    sendBinary: () => true,
    bufferedAmount: 0,
    signal: new AbortController().signal,
    onClose: (fn) => hooks.add(fn),
    subscribe: (stop) => hooks.subscribe(stop),
  };
}

/** Waits until robots.list says robot `id` is ready (online, matching, fresh). */
export async function waitRobotReady(rpc: RpcTestClient, id: string, what: string, timeoutMs = 20_000): Promise<void> {
  await waitFor(
    async () =>
      (await rpc.call('robots.list')).result.robots.find((r: { id: string }) => r.id === id)?.ready ? true : undefined,
    what,
    timeoutMs,
    50,
  );
}
