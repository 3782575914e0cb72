// HTTP helpers shared by every route: JSON replies, errors in one (OpenAI-compatible) shape,
// and bounded body reading that rejects an oversized body instead of buffering it.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { formatIssue } from '../../robot/common/validation/issue.js';
import { DEFAULT_MAX_DEPTH, jsonDepth, prototypeKeyIssues } from '../../robot/common/validation/json-guard.js';

/** An error that becomes an HTTP reply: `{"error": {"message", "type", "param"?, "code"?, ...extra}}`. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly type = 'invalid_request_error',
    readonly param?: string,
    readonly more: { code?: string; headers?: Record<string, string>; extra?: Record<string, unknown> } = {},
  ) {
    super(message);
    this.name = 'HttpError';
  }

  /** The `error` object of the reply (also sent as an SSE event when a stream fails). */
  body(): Record<string, unknown> {
    return {
      message: this.message,
      type: this.type,
      param: this.param ?? null,
      code: this.more.code ?? null,
      ...this.more.extra,
    };
  }
}

export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
    'cache-control': 'no-store',
    ...headers,
  });
  res.end(text);
}

export function sendError(res: ServerResponse, err: HttpError, headers: Record<string, string> = {}): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  sendJson(res, err.status, { error: err.body() }, { ...err.more.headers, ...headers });
}

/** Reads the body up to `limit` bytes; a larger one is refused with 413 without reading the rest. */
export function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  const declared = Number(req.headers['content-length'] ?? NaN);
  if (declared > limit) {
    return Promise.reject(
      new HttpError(
        413,
        `request body of ${declared} bytes exceeds the limit of ${limit} bytes (server.max_message_bytes)`,
      ),
    );
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        req.removeAllListeners('data');
        req.pause();
        reject(new HttpError(413, `request body exceeds the limit of ${limit} bytes (server.max_message_bytes)`));
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', (err) => reject(new HttpError(400, `could not read the request body: ${err.message}`)));
  });
}

/**
 * Reads and parses a JSON body (content-type is not enforced: curl sends form types by default).
 * A body nested deeper than `maxDepth` or using a prototype name as a key is refused with 400.
 */
export async function readJson(req: IncomingMessage, limit: number, maxDepth = DEFAULT_MAX_DEPTH): Promise<unknown> {
  const body = await readBody(req, limit);
  let value: unknown;
  try {
    value = JSON.parse(body.toString('utf8'));
  } catch (err) {
    throw new HttpError(400, `request body is not valid JSON: ${(err as Error).message}`);
  }
  const depth = jsonDepth(value, maxDepth);
  if (depth > maxDepth)
    throw new HttpError(
      400,
      `request body nests arrays and objects more than ${maxDepth} levels deep (server.max_json_depth)`,
      'invalid_request_error',
      undefined,
      { code: 'max_json_depth' },
    );
  const reserved = prototypeKeyIssues(value, '', 1)[0];
  if (reserved)
    throw new HttpError(400, `request body: ${formatIssue(reserved)}`, 'invalid_request_error', reserved.path, {
      code: 'reserved_key',
    });
  return value;
}
