// The console's HTTP routes, all public (the page and its code are not secrets): GET / (the
// console with a live session cookie, else the login page), POST /console/login (token → cookie),
// POST /console/logout, and the fixed files under /console/. Data flow over /ws only.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { tokenMatches } from '../api/auth.js';
import { HttpError, readBody } from '../api/http.js';
import type { HttpRoutes } from '../api/routes.js';
import type { Logger } from '../log.js';
import { type Asset, ConsoleFiles, type Page } from './assets.js';
import { ConsoleSessions } from './sessions.js';

const LOGIN_BODY_BYTES = 4096;
/** Failed logins from one address in LOGIN_WINDOW_MS after which its logins wait (429). */
export const MAX_FAILED_LOGINS = 10;
/** Failed logins from all addresses together after which every login waits (guessing from many). */
export const MAX_FAILED_LOGINS_ALL = 100;
const LOGIN_WINDOW_MS = 10_000;
/** Addresses remembered at once; the oldest is forgotten past it. */
const MAX_ADDRESSES = 4096;

/**
 * The failed logins of the last window, per address and all together: an address guessing
 * slows itself, not the operator's logins from elsewhere; many addresses together slow everyone.
 */
class LoginLimiter {
  private readonly byAddress = new Map<string, number[]>();
  private all: number[] = [];

  constructor(private readonly now: () => number) {}

  /** Seconds `address` waits before its next login is heard, with the limit that holds it, or 0. */
  retryAfter(address: string): { wait: number; limit: number; who: string } | null {
    const t = this.now();
    const recent = (list: number[]) => list.filter((f) => t - f < LOGIN_WINDOW_MS);
    this.all = recent(this.all);
    const mine = recent(this.byAddress.get(address) ?? []);
    if (mine.length) this.byAddress.set(address, mine);
    else this.byAddress.delete(address);
    // The wait lasts until the failure that filled the limit leaves the window.
    const over = (list: number[], max: number) =>
      list.length < max ? 0 : Math.ceil((list[list.length - max]! + LOGIN_WINDOW_MS - t) / 1000);
    const own = over(mine, MAX_FAILED_LOGINS);
    if (own > 0) return { wait: own, limit: MAX_FAILED_LOGINS, who: 'from this address' };
    const everyone = over(this.all, MAX_FAILED_LOGINS_ALL);
    return everyone > 0 ? { wait: everyone, limit: MAX_FAILED_LOGINS_ALL, who: 'from all addresses' } : null;
  }

  failed(address: string): void {
    const t = this.now();
    this.all.push(t);
    const mine = this.byAddress.get(address) ?? [];
    this.byAddress.delete(address); // re-inserted last: the map's order is oldest first
    this.byAddress.set(address, [...mine, t]);
    if (this.byAddress.size > MAX_ADDRESSES) this.byAddress.delete(this.byAddress.keys().next().value!);
  }
}

/** A Host header fit to go into the CSP (anything else: the page gets 'self' only). */
const SAFE_HOST = /^[A-Za-z0-9.\-[\]:]{1,255}$/;

function securityHeaders(req: IncomingMessage, scriptHashes: string[]): Record<string, string> {
  const host = req.headers.host ?? '';
  const ws = SAFE_HOST.test(host) ? ` ws://${host} wss://${host}` : '';
  return {
    'content-security-policy': [
      "default-src 'none'",
      `script-src 'self' ${scriptHashes.join(' ')}`.trim(),
      "style-src 'self'",
      "img-src 'self' data: blob:",
      `connect-src 'self'${ws}`,
      "form-action 'self'",
      "base-uri 'none'",
      "frame-ancestors 'none'",
    ].join('; '),
    'x-content-type-options': 'nosniff',
    // same-origin, not no-referrer: with no-referrer Chromium posts forms with `Origin: null`.
    'referrer-policy': 'same-origin',
    'x-frame-options': 'DENY',
  };
}

function send(
  req: IncomingMessage,
  res: ServerResponse,
  a: Asset,
  status = 200,
  extra: Record<string, string> = {},
): void {
  const gzip = /\bgzip\b/.test(String(req.headers['accept-encoding'] ?? ''));
  if (status === 200 && req.headers['if-none-match'] === a.etag) {
    res.writeHead(304, { etag: a.etag, ...extra });
    res.end();
    return;
  }
  const body = gzip ? a.gzip() : a.body;
  res.writeHead(status, {
    'content-type': a.type,
    'content-length': body.length,
    'cache-control': 'no-cache',
    etag: a.etag,
    vary: 'accept-encoding, cookie',
    ...(gzip ? { 'content-encoding': 'gzip' } : {}),
    ...extra,
  });
  res.end(req.method === 'HEAD' ? undefined : body);
}

/** The token of a login form (urlencoded, as the page's <form> posts it) or JSON body. */
function formToken(body: Buffer, type: string | undefined): string | undefined {
  const text = body.toString('utf8');
  if (type?.startsWith('application/json')) {
    try {
      const v = JSON.parse(text) as { token?: unknown };
      return typeof v?.token === 'string' ? v.token : undefined;
    } catch {
      return undefined;
    }
  }
  return new URLSearchParams(text).get('token') ?? undefined;
}

/** A form posted from another site (its Origin names another host) is refused. */
function crossSite(req: IncomingMessage): boolean {
  const origin = req.headers.origin;
  if (!origin || origin === 'null') return origin === 'null';
  try {
    return new URL(origin).host !== req.headers.host;
  } catch {
    return true;
  }
}

/** Registers the console; without its files (a tree copied without daemon/console/web) `/` says so (503). */
export function registerConsoleRoutes(
  routes: HttpRoutes,
  token: string,
  sessions: ConsoleSessions,
  log: Logger,
  opts: { now?: () => number; webDir?: string } = {},
): void {
  const files = new ConsoleFiles(opts.webDir);
  const problem = files.problem();
  if (problem) {
    const message = `the operator console's files are missing (${problem}); the API works without it`;
    log.warn(message);
    routes.add({
      method: 'GET',
      path: '/',
      auth: false,
      handler: () => {
        throw new HttpError(503, message, 'server_error');
      },
    });
    return;
  }
  const limiter = new LoginLimiter(opts.now ?? (() => performance.now()));
  const serve = (
    req: IncomingMessage,
    res: ServerResponse,
    p: Page,
    status = 200,
    extra: Record<string, string> = {},
  ) => send(req, res, p.asset, status, { ...securityHeaders(req, p.hashes), ...extra });

  routes.add({
    method: 'GET',
    path: '/',
    auth: false,
    handler: (req, res) => {
      const f = files.get();
      serve(req, res, sessions.valid(ConsoleSessions.idOf(req)) ? f.console : f.login);
    },
  });
  routes.add({
    method: 'POST',
    path: '/console/login',
    auth: false,
    handler: async (req, res) => {
      if (crossSite(req)) throw new HttpError(403, 'console login: Origin must be this host', 'permission_error');
      const address = req.socket.remoteAddress ?? '';
      const held = limiter.retryAfter(address);
      if (held)
        throw new HttpError(
          429,
          `console login: ${held.limit} wrong tokens ${held.who} within ${LOGIN_WINDOW_MS / 1000} s; try again in ${held.wait} s`,
          'rate_limit_error',
          undefined,
          { headers: { 'retry-after': String(held.wait) } },
        );
      const presented = formToken(await readBody(req, LOGIN_BODY_BYTES), req.headers['content-type']);
      if (!tokenMatches(presented, token)) {
        limiter.failed(address);
        serve(req, res, files.get().failedLogin, 401, { 'cache-control': 'no-store' });
        return;
      }
      res.writeHead(303, {
        location: '/',
        'set-cookie': sessions.cookie(sessions.create()),
        'cache-control': 'no-store',
      });
      res.end();
    },
  });
  routes.add({
    method: 'POST',
    path: '/console/logout',
    auth: false,
    handler: (req, res) => {
      if (crossSite(req)) throw new HttpError(403, 'console logout: Origin must be this host', 'permission_error');
      sessions.revoke(ConsoleSessions.idOf(req));
      res.writeHead(303, { location: '/', 'set-cookie': sessions.cookie(null), 'cache-control': 'no-store' });
      res.end();
    },
  });
  // Whether this browser's login is still live (a page whose reconnect is refused asks, then goes
  // to the login form); before the file routes, which would take the path.
  routes.add({
    method: 'GET',
    path: '/console/session',
    auth: false,
    handler: (req, res) => {
      if (!sessions.valid(ConsoleSessions.idOf(req)))
        throw new HttpError(401, 'console session: not logged in, or the login ended', 'authentication_error');
      res.writeHead(204, { 'cache-control': 'no-store' });
      res.end();
    },
  });
  for (const path of ['/console/:file', '/console/vendor/:file']) {
    routes.add({
      method: 'GET',
      path,
      auth: false,
      handler: (req, res, { url }) => {
        const a = files.get().assets.get(url.pathname);
        if (!a) throw new HttpError(404, `no console file ${url.pathname}`);
        send(req, res, a, 200, { 'x-content-type-options': 'nosniff' });
      },
    });
  }
}
