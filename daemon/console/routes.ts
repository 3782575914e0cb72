// The console's HTTP routes, all public (the page and its code are not secrets): GET / (the
// console with a live session cookie, else the login page), POST /console/login (token → cookie),
// POST /console/logout, and the fixed files under /console/. Data flow over /ws only.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { tokenMatches } from '../api/auth.js';
import { AuthLimiter } from '../api/auth-limiter.js';
import { HttpError, readBody } from '../api/http.js';
import type { HttpRoutes } from '../api/routes.js';
import type { Logger } from '../log.js';
import { type Asset, ConsoleFiles, type Page } from './assets.js';
import { ConsoleSessions } from './sessions.js';

const LOGIN_BODY_BYTES = 4096;

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
  opts: { limiter?: AuthLimiter; webDir?: string } = {},
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
  // Shared with the API server's token checks: one budget of guesses per address.
  const limiter = opts.limiter ?? new AuthLimiter();
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
      const holdOff = () => {
        const refused = limiter.refusal(address, 'console login');
        if (refused) throw refused;
      };
      holdOff();
      const presented = formToken(await readBody(req, LOGIN_BODY_BYTES), req.headers['content-type']);
      // Again once the body is in: logins sent together all passed the first check.
      holdOff();
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
