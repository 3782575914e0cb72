// The JSON-RPC method registry. Later parts add methods with
//   rpc.register('engine.generate', paramsSchema, async (params, ctx) => { ctx.notify(...); return result; })
// Params are checked by a schema node (robot/common/validation/builders.ts) before the handler runs.
import type { Node } from '../../../robot/common/validation/builders.js';

/** Standard JSON-RPC 2.0 error codes. */
export const RpcCode = {
  PARSE_ERROR: -32700,
  INVALID_REQUEST: -32600,
  METHOD_NOT_FOUND: -32601,
  INVALID_PARAMS: -32602,
  INTERNAL_ERROR: -32603,
} as const;

/** Thrown by handlers to reply with a specific error (application codes: -32000..-32099 or >= 1). */
export class RpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
  ) {
    super(message);
    this.name = 'RpcError';
  }
}

export interface RpcContext {
  /** Unique per WebSocket connection. */
  readonly connectionId: string;
  /** Sends a notification to this client (streamed results); false when it could not be sent. */
  notify(method: string, params: unknown): boolean;
  /** Sends one binary WebSocket message to this client (camera frames); false when it could not be sent. */
  sendBinary(data: Buffer): boolean;
  /** Bytes queued on the socket: streams can skip or pause when the client reads slowly. */
  readonly bufferedAmount: number;
  /** Aborted when the connection closes. */
  readonly signal: AbortSignal;
  /** Runs `fn` once when the connection closes; the returned function cancels that (call it when done earlier). */
  onClose(fn: () => void): () => void;
  /**
   * Opens a subscription: -32600 past server.max_subscriptions (this connection) or
   * server.max_subscriptions_total (all); `stop` runs if the connection closes first. The returned
   * end() frees the slot: call it from `stop` and on unsubscribe.
   */
  subscribe(stop: () => void): () => void;
}

export type RpcHandler<P> = (params: P, ctx: RpcContext) => unknown;

export interface RpcMethod<P = unknown> {
  name: string;
  params: Node<P>;
  handler: RpcHandler<P>;
  description: string;
}

const NAME = /^[a-z][a-zA-Z0-9_]*(\.[a-z][a-zA-Z0-9_]*)*$/;

export class RpcRegistry {
  // biome-ignore lint/suspicious/noExplicitAny: one map holds methods of every parameter type; register() checks each
  private readonly methods = new Map<string, RpcMethod<any>>();

  /** Names are dotted (`area.verb`, or one word such as `chat`); `rpc.*` is reserved by JSON-RPC. */
  register<P>(name: string, params: Node<P>, handler: RpcHandler<P>, description = ''): void {
    if (!NAME.test(name) || name.startsWith('rpc.'))
      throw new Error(
        `invalid JSON-RPC method name ${JSON.stringify(name)}: use area.verb or a lower-case word, not rpc.*`,
      );
    if (this.methods.has(name)) throw new Error(`JSON-RPC method ${name} is already registered`);
    this.methods.set(name, { name, params, handler, description });
  }

  get(name: string): RpcMethod | undefined {
    return this.methods.get(name);
  }

  names(): string[] {
    return [...this.methods.keys()].sort();
  }
}
