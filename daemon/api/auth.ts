// Token auth for HTTP and WebSocket: `Authorization: Bearer <token>`; `?token=<token>` only on
// WebSocket upgrades (browsers cannot set headers there; query strings end up in logs and history).
import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { HttpError } from './http.js';

/** The token a request presents, if any: the Bearer header, then (upgrades only) the query string. */
export function presentedToken(req: IncomingMessage, url: URL, allowQuery: boolean): string | undefined {
  const header = req.headers.authorization;
  if (header) {
    const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
    if (m) return m[1];
  }
  return allowQuery ? (url.searchParams.get('token') ?? undefined) : undefined;
}

/** Constant-time comparison (both sides hashed so lengths do not leak). */
export function tokenMatches(presented: string | undefined, expected: string): boolean {
  if (presented === undefined) return false;
  const a = createHash('sha256').update(presented).digest();
  const b = createHash('sha256').update(expected).digest();
  return timingSafeEqual(a, b);
}

/** 401 for an HTTP route; a token in the query string is named, since it only counts on upgrades. */
export function unauthorized(url: URL): HttpError {
  const hint = url.searchParams.has('token')
    ? '; ?token= is accepted only on WebSocket upgrades, HTTP routes need the header'
    : '';
  return new HttpError(
    401,
    `missing or wrong API token: send "Authorization: Bearer <token>" (see server.token)${hint}`,
    'authentication_error',
  );
}
