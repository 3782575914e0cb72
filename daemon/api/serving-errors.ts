// Serving failures → the HTTP error (OpenAI's shape and status) and the JSON-RPC error, in one
// table so both APIs say the same thing.
import { formatIssue } from '../../robot/common/validation/issue.js';
import { AdapterNotFoundError } from '../engine/adapters/adapter-manager.js';
import { AdapterError } from '../engine/adapters/plan.js';
import { EngineError } from '../engine/native-model.js';
import { ModelNotFoundError } from '../engine/model-registry.js';
import { CancelledError, BusyError } from '../engine/request-queue.js';
import { RequestError } from '../engine/request-error.js';
import { ModelLoadError } from '../engine/served-model.js';
import type { ToolCallError } from '../engine/tool-calls/errors.js';
import { FileAccessError } from '../util/file-roots.js';
import { HttpError } from './http.js';
import { RpcCode, RpcError } from './rpc/registry.js';

/** JSON-RPC application error codes of the model server. */
export const ServingRpcCode = {
  BUSY: -32001,
  MODEL_NOT_FOUND: -32002,
  MODEL_UNAVAILABLE: -32003,
  MODEL_OUTPUT: -32004,
  ENGINE: -32005,
  BAD_FILE: -32006,
} as const;

interface Failure {
  status: number;
  type: string;
  code?: string;
  param?: string;
  rpc: number;
  headers?: Record<string, string>;
  extra?: Record<string, unknown>;
}

/** The model's output broke the tool-call or JSON contract (never passed off as text). */
export function outputFailure(err: ToolCallError): HttpError {
  return new HttpError(
    500,
    `the model's output is invalid (${err.code}): ${err.message}`,
    'model_output_error',
    undefined,
    {
      code: err.code,
      // Retrying the same request repeats a seeded sample; clients decide themselves.
      headers: { 'x-should-retry': 'false' },
      extra: {
        raw: err.raw,
        ...(err.tool ? { tool: err.tool } : {}),
        ...(err.issues.length
          ? { issues: err.issues.map((i) => ({ path: i.path, rule: i.rule, message: formatIssue(i) })) }
          : {}),
      },
    },
  );
}

function classify(err: unknown): Failure & { message: string } {
  const message = (err as Error)?.message ?? String(err);
  if (err instanceof HttpError)
    return {
      status: err.status,
      type: err.type,
      code: err.more.code,
      param: err.param,
      rpc: RpcCode.INVALID_PARAMS,
      message,
    };
  if (err instanceof RequestError)
    return {
      status: 400,
      type: 'invalid_request_error',
      // A reserved key is the code the body check gives it, a prompt too long OpenAI's code;
      // other rules are invalid_<rule>.
      code:
        err.rule === 'reserved_key'
          ? err.rule
          : err.rule === 'context'
            ? 'context_length_exceeded'
            : `invalid_${err.rule}`,
      param: err.field,
      rpc: RpcCode.INVALID_PARAMS,
      message,
    };
  // A path outside the roots or missing is the caller's mistake; a file that is there but unusable
  // (a FIFO, an oversized or malformed file) is its own application error.
  if (err instanceof FileAccessError && (err.problem === 'outside' || err.problem === 'missing'))
    return {
      status: 400,
      type: 'invalid_request_error',
      code: err.problem === 'outside' ? 'path_outside_roots' : 'path_not_found',
      param: 'path',
      rpc: RpcCode.INVALID_PARAMS,
      message,
    };
  if (err instanceof FileAccessError || (err instanceof AdapterError && err.field === 'path'))
    return {
      status: 422,
      type: 'invalid_request_error',
      code: 'bad_file',
      param: 'path',
      rpc: ServingRpcCode.BAD_FILE,
      message,
    };
  if (err instanceof AdapterError) {
    const code = err instanceof AdapterNotFoundError ? 'adapter_not_found' : 'invalid_adapter';
    return {
      status: err instanceof AdapterNotFoundError ? 404 : 400,
      type: 'invalid_request_error',
      code,
      param: err.field,
      rpc: RpcCode.INVALID_PARAMS,
      message,
    };
  }
  if (err instanceof ModelNotFoundError)
    return {
      status: 404,
      type: 'invalid_request_error',
      code: 'model_not_found',
      param: 'model',
      rpc: ServingRpcCode.MODEL_NOT_FOUND,
      message,
    };
  if (err instanceof BusyError) {
    return {
      status: 429,
      type: 'busy_error',
      code: 'busy',
      rpc: ServingRpcCode.BUSY,
      headers: { 'retry-after': '1' },
      // The limit that refused it: queue_size (the whole queue) or queue_per_client (this client's share).
      extra: { waiting: err.waiting, [err.limit]: err.capacity },
      message,
    };
  }
  if (err instanceof ModelLoadError) {
    const missing = /native addon/.test(message);
    return {
      status: missing ? 503 : 500,
      type: 'server_error',
      code: missing ? 'engine_unavailable' : 'model_load_failed',
      rpc: ServingRpcCode.MODEL_UNAVAILABLE,
      message,
    };
  }
  if (err instanceof CancelledError)
    return { status: 503, type: 'server_error', code: 'unavailable', rpc: ServingRpcCode.MODEL_UNAVAILABLE, message };
  if (err instanceof EngineError)
    return {
      status: 500,
      type: 'server_error',
      code: 'engine_error',
      rpc: ServingRpcCode.ENGINE,
      message: `engine error: ${message}`,
    };
  return {
    status: 500,
    type: 'server_error',
    code: 'internal_error',
    rpc: RpcCode.INTERNAL_ERROR,
    message: `internal error: ${message}`,
  };
}

export function toHttpError(err: unknown): HttpError {
  if (err instanceof HttpError) return err;
  const f = classify(err);
  return new HttpError(f.status, f.message, f.type, f.param, { code: f.code, headers: f.headers, extra: f.extra });
}

export function toRpcError(err: unknown): RpcError {
  if (err instanceof RpcError) return err;
  if (err instanceof HttpError && err.type === 'model_output_error')
    return new RpcError(ServingRpcCode.MODEL_OUTPUT, err.message, err.body());
  const f = classify(err);
  const data: Record<string, unknown> = {
    type: f.type,
    ...(f.code ? { code: f.code } : {}),
    ...(f.param ? { field: f.param } : {}),
    ...f.extra,
  };
  if (err instanceof RequestError) data.rule = err.rule;
  return new RpcError(f.rpc, f.rpc === RpcCode.INVALID_PARAMS ? `Invalid params: ${f.message}` : f.message, data);
}
