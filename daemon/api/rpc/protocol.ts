// JSON-RPC 2.0 message handling (transport-free): parse, validate the request shape, check
// params against the method's schema, run the handler, build the response(s). Batches supported.
import type { Logger } from '../../log.js';
import { formatIssue, type Issue } from '../../../robot/common/validation/issue.js';
import { jsonDepth, prototypeKeyIssues } from '../../../robot/common/validation/json-guard.js';
import { isRecord } from '../../../robot/common/validation/values.js';
import { parseStrictJson } from '../../../robot/tools/strict-json.js';
import { RpcCode, RpcError, type RpcContext, type RpcRegistry } from './registry.js';

export type RpcId = string | number | null;

export interface RpcErrorObject {
  code: number;
  message: string;
  data?: unknown;
}

export type RpcResponse =
  | { jsonrpc: '2.0'; id: RpcId; result: unknown }
  | { jsonrpc: '2.0'; id: RpcId; error: RpcErrorObject };

export interface MessageLimits {
  /** Most calls in one batch (server.max_batch_calls). */
  maxBatch: number;
  /** Deepest nesting of arrays/objects (server.max_json_depth). */
  maxDepth: number;
}

export const DEFAULT_LIMITS: MessageLimits = { maxBatch: 1000, maxDepth: 64 };

/** Calls of a batch started between two yields to the event loop. */
export const BATCH_SLICE = 64;

export interface DispatchHooks {
  log: Logger;
  /** Called once per request with `ok` or the error code. */
  onOutcome?(method: string, known: boolean, outcome: string): void;
  limits?: MessageLimits;
  /** Awaited before each slice of a batch (its size given) so timers and I/O run between slices (default: setImmediate). */
  yieldToLoop?: (calls: number, first: boolean) => Promise<void>;
}

const nextTurn = (_calls: number, first: boolean): Promise<void> =>
  first ? Promise.resolve() : new Promise((resolve) => setImmediate(resolve));

const fail = (id: RpcId, code: number, message: string, data?: unknown): RpcResponse => ({
  jsonrpc: '2.0',
  id,
  error: data === undefined ? { code, message } : { code, message, data },
});

/** Messages up to this length are parsed strictly, refusing duplicate keys (~10× JSON.parse's time: ~3 ms here at 64 KiB). */
const DUPLICATE_CHECK_CHARS = 64 * 1024;

function validId(v: unknown): v is RpcId {
  return v === null || typeof v === 'string' || (typeof v === 'number' && Number.isFinite(v));
}

/**
 * Handles one text message; returns what to send back (nothing for notifications). A batch's
 * replies come as the JSON text of their array in bytes: each reply is serialized as it completes,
 * so a long batch holds flat bytes outside the JS heap, not object trees that outlive collections.
 */
export async function handleMessage(
  text: string,
  registry: RpcRegistry,
  ctx: RpcContext,
  hooks: DispatchHooks,
): Promise<RpcResponse | Buffer | undefined> {
  const limits = hooks.limits ?? DEFAULT_LIMITS;
  const refused = (message: string, data: Record<string, unknown>): RpcResponse => {
    hooks.onOutcome?.('(invalid)', false, String(RpcCode.INVALID_REQUEST));
    return fail(null, RpcCode.INVALID_REQUEST, `Invalid Request: ${message}`, data);
  };
  // JSON.parse keeps the last of a key given twice: a tool call {"gripper": 2, "gripper": 0.5}
  // would run as 0.5. Requests of the size a robot call has are read strictly (their only parse);
  // on any strict error JSON.parse decides, so a parse error stays a parse error.
  const strict = text.length <= DUPLICATE_CHECK_CHARS ? parseStrictJson(text, limits.maxDepth + 1) : undefined;
  let msg: unknown;
  if (strict?.ok) msg = strict.value;
  else {
    try {
      msg = JSON.parse(text);
    } catch (err) {
      hooks.onOutcome?.('(parse)', false, String(RpcCode.PARSE_ERROR));
      return fail(null, RpcCode.PARSE_ERROR, `Parse error: ${(err as Error).message}`);
    }
    if (strict?.error.startsWith('duplicate key'))
      return refused(`${strict.error}: a key given twice is ambiguous`, { field: '(message)', rule: 'duplicate_key' });
  }
  // Checked before any handler runs: deeper values would overflow the stack of recursive code.
  const depth = jsonDepth(msg, limits.maxDepth);
  if (depth > limits.maxDepth)
    return refused(
      `the message nests arrays and objects more than ${limits.maxDepth} levels deep (server.max_json_depth)`,
      { field: '(message)', rule: 'max_json_depth', limit: limits.maxDepth, value: depth },
    );
  if (!Array.isArray(msg)) return handleRequest(msg, registry, ctx, hooks);
  if (msg.length === 0) return fail(null, RpcCode.INVALID_REQUEST, 'Invalid Request: an empty batch');
  if (msg.length > limits.maxBatch)
    return refused(
      `a batch of ${msg.length} calls exceeds the limit of ${limits.maxBatch} calls (server.max_batch_calls)`,
      { field: '(batch)', rule: 'max_batch_calls', limit: limits.maxBatch, value: msg.length },
    );
  const yieldToLoop = hooks.yieldToLoop ?? nextTurn;
  const serialized = (m: unknown) =>
    handleRequest(m, registry, ctx, hooks).then((r): Buffer | undefined =>
      r === undefined ? undefined : Buffer.from(JSON.stringify(r)),
    );
  const replies = await runBatch(msg, serialized, yieldToLoop, ctx.signal);
  return joinArray(replies.filter((r): r is Buffer => r !== undefined));
}

const OPEN = Buffer.from('[');
const COMMA = Buffer.from(',');
const CLOSE = Buffer.from(']');

/** `[a,b,...]` from serialized elements; nothing for none (a batch of notifications gets no reply). */
function joinArray(parts: Buffer[]): Buffer | undefined {
  if (parts.length === 0) return undefined;
  const pieces: Buffer[] = [OPEN];
  for (const p of parts) pieces.push(p, COMMA);
  pieces[pieces.length - 1] = CLOSE;
  return Buffer.concat(pieces);
}

/** Starts the calls a slice at a time, yielding before each slice so timers (heartbeats) keep their period. */
async function runBatch<T>(
  items: unknown[],
  run: (m: unknown) => Promise<T>,
  yieldToLoop: (calls: number, first: boolean) => Promise<void>,
  signal: AbortSignal,
) {
  const pending: Promise<T>[] = [];
  for (let i = 0; i < items.length; i += BATCH_SLICE) {
    await yieldToLoop(Math.min(BATCH_SLICE, items.length - i), i === 0);
    // The rest of a gone client's batch is not run: nobody would read its replies.
    if (signal.aborted) break;
    for (const m of items.slice(i, i + BATCH_SLICE)) pending.push(run(m));
  }
  return Promise.all(pending);
}

/** Checks the request envelope; returns an error response or the parts. */
function envelope(req: unknown): RpcResponse | { id: RpcId | undefined; method: string; params: unknown } {
  if (!isRecord(req))
    return fail(null, RpcCode.INVALID_REQUEST, 'Invalid Request: a request must be a JSON object', {
      field: '(request)',
    });
  const id = 'id' in req ? req.id : undefined;
  if (id !== undefined && !validId(id)) {
    return fail(null, RpcCode.INVALID_REQUEST, 'Invalid Request: "id" must be a string, a number or null', {
      field: 'id',
    });
  }
  const replyId = id ?? null;
  if (req.jsonrpc !== '2.0')
    return fail(replyId, RpcCode.INVALID_REQUEST, 'Invalid Request: "jsonrpc" must be exactly "2.0"', {
      field: 'jsonrpc',
    });
  if (typeof req.method !== 'string' || req.method === '') {
    return fail(replyId, RpcCode.INVALID_REQUEST, 'Invalid Request: "method" must be a non-empty string', {
      field: 'method',
    });
  }
  if (req.params !== undefined && typeof req.params !== 'object') {
    return fail(replyId, RpcCode.INVALID_REQUEST, 'Invalid Request: "params" must be an object or an array', {
      field: 'params',
    });
  }
  return { id, method: req.method, params: req.params ?? undefined };
}

function paramsError(id: RpcId, issues: Issue[]): RpcResponse {
  const first = issues[0]!;
  return fail(id, RpcCode.INVALID_PARAMS, `Invalid params: ${issues.map((i) => formatIssue(i)).join('; ')}`, {
    field: first.path || '(params)',
    rule: first.rule,
    issues: issues.map((i) => ({ field: i.path || '(params)', rule: i.rule, ...(i.hint ? { hint: i.hint } : {}) })),
  });
}

async function handleRequest(
  req: unknown,
  registry: RpcRegistry,
  ctx: RpcContext,
  hooks: DispatchHooks,
): Promise<RpcResponse | undefined> {
  const env = envelope(req);
  if ('jsonrpc' in env) {
    hooks.onOutcome?.('(invalid)', false, String(RpcCode.INVALID_REQUEST));
    return env;
  }
  const { id, method: name } = env;
  const notification = id === undefined;
  const method = registry.get(name);
  const reply = (r: RpcResponse): RpcResponse | undefined => {
    hooks.onOutcome?.(name, method !== undefined, 'error' in r ? String(r.error.code) : 'ok');
    return notification ? undefined : r;
  };
  if (!method) return reply(fail(id ?? null, RpcCode.METHOD_NOT_FOUND, `Method not found: ${name}`, { method: name }));
  // Every method's params, open ones included: handlers build records from these keys.
  const reserved = prototypeKeyIssues(env.params);
  if (reserved.length > 0) return reply(paramsError(id ?? null, reserved));
  if (Array.isArray(env.params)) {
    return reply(
      fail(
        id ?? null,
        RpcCode.INVALID_PARAMS,
        'Invalid params: params must be an object of named parameters, not an array',
        { field: '(params)', rule: 'must be an object' },
      ),
    );
  }
  const issues: Issue[] = [];
  const params = method.params.check(env.params, '', issues);
  if (issues.length > 0) return reply(paramsError(id ?? null, issues));
  try {
    const result = await method.handler(params, ctx);
    return reply({ jsonrpc: '2.0', id: id ?? null, result: result ?? null });
  } catch (err) {
    if (err instanceof RpcError) return reply(fail(id ?? null, err.code, err.message, err.data));
    hooks.log.error({ method: name, err }, 'JSON-RPC handler failed');
    return reply(
      fail(id ?? null, RpcCode.INTERNAL_ERROR, `Internal error in ${name}: ${(err as Error)?.message ?? String(err)}`),
    );
  }
}
