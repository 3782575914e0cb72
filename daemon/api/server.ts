// The one HTTP server: registered routes (token-protected unless marked public, checked before
// routing) and the JSON-RPC WebSocket endpoint /ws (upgrade refused with 401 without the token
// or, on /ws only, a console session cookie from the same origin). Requests under a Host name
// that is not the daemon's are refused (421), and wrong tokens are rate limited (429).
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';
import type { ServerConfig } from '../config/schema.js';
import type { Logger, Logs } from '../log.js';
import { Service } from '../service.js';
import { dialHost } from '../util/net.js';
import { presentedToken, unauthorized } from './auth.js';
import { AuthLimiter } from './auth-limiter.js';
import { HostCheck } from './host-check.js';
import { HttpError, sendError } from './http.js';
import type { Metrics } from './metrics.js';
import type { HttpRoutes } from './routes.js';
import { RpcConnection } from './rpc/connection.js';
import { ServerBacklog } from './rpc/backlog.js';
import { LoopShare } from './rpc/loop-share.js';
import type { RpcRegistry } from './rpc/registry.js';
import { SubscriptionBudget } from './rpc/subscriptions.js';

export const WS_PATH = '/ws';

export interface ApiServerDeps {
  config: ServerConfig;
  token: string;
  logs: Logs;
  routes: HttpRoutes;
  rpc: RpcRegistry;
  metrics: Metrics;
  /** Console logins (daemon/console): a session cookie from the same origin also opens /ws. */
  sessions?: {
    upgradeAllowed(req: IncomingMessage): boolean;
    onRevoke(req: IncomingMessage, fn: (why: string) => void): () => void;
    sweep(): void;
  };
  /** Wrong-token attempts; shared with the console's login so both draw on one budget. */
  limiter?: AuthLimiter;
}

/** A further WebSocket endpoint (e.g. robot controllers on /controller): same token, same pings. */
export type WebSocketEndpoint = (ws: WebSocket, req: IncomingMessage) => void;

const wsServer = (maxPayload: number) => new WebSocketServer({ noServer: true, maxPayload, perMessageDeflate: false });

export class ApiServer extends Service {
  readonly name = 'api';
  private readonly endpoints = new Map<string, { accept: WebSocketEndpoint; wss: WebSocketServer }>();
  private server?: Server;
  private wss?: WebSocketServer;
  private heartbeat?: NodeJS.Timeout;
  /** Clients that answered the last ping (or connected since). */
  private readonly alive = new WeakSet<WebSocket>();
  private nextConn = 1;
  private readonly share = new LoopShare();
  private readonly backlog: ServerBacklog;
  private readonly subscriptions: SubscriptionBudget;
  private readonly hosts: HostCheck;
  private readonly limiter: AuthLimiter;
  /** Resolved once listening: asking the socket on every health call costs a syscall. */
  private port?: number;
  private readonly log: Logger;

  constructor(private readonly deps: ApiServerDeps) {
    super();
    this.log = deps.logs.get('api.http');
    this.backlog = new ServerBacklog(deps.config.ws_total_buffered_bytes);
    this.subscriptions = new SubscriptionBudget(deps.config.max_subscriptions, deps.config.max_subscriptions_total);
    this.hosts = new HostCheck(deps.config.host, deps.config.allowed_hosts);
    this.limiter = deps.limiter ?? new AuthLimiter();
  }

  /** Bound address once started (port resolved when config asked for 0). */
  address(): { host: string; port: number } {
    if (this.port === undefined || !this.server?.listening) throw new Error('api server is not listening');
    return { host: this.deps.config.host, port: this.port };
  }

  url(scheme: 'http' | 'ws' = 'http'): string {
    const { host, port } = this.address();
    return `${scheme}://${dialHost(host)}:${port}`;
  }

  /**
   * For later parts: accepts authenticated WebSocket upgrades on `path` (register before start);
   * `maxPayload` replaces server.max_message_bytes there (camera frames are larger).
   */
  addWebSocketPath(path: string, onConnection: WebSocketEndpoint, opts: { maxPayload?: number } = {}): void {
    if (path === WS_PATH || this.endpoints.has(path)) throw new Error(`WebSocket path ${path} is already served`);
    this.endpoints.set(path, {
      accept: onConnection,
      wss: wsServer(opts.maxPayload ?? this.deps.config.max_message_bytes),
    });
  }

  /** Every open WebSocket, of /ws and of the other endpoints. */
  private *clients(): Iterable<WebSocket> {
    yield* this.wss?.clients ?? [];
    for (const e of this.endpoints.values()) yield* e.wss.clients;
  }

  protected override describe() {
    // Sizes, not the client list: health is called per flood message (bench load: 200 clients).
    let ws = this.wss?.clients.size ?? 0;
    for (const e of this.endpoints.values()) ws += e.wss.clients.size;
    return { detail: { url: this.url(), ws_clients: ws, ws_subscriptions: this.subscriptions.live } };
  }

  protected async onStart(): Promise<void> {
    const { config } = this.deps;
    this.wss = wsServer(config.max_message_bytes);
    this.heartbeat = setInterval(() => this.pingAll(), config.ws_heartbeat_ms);
    this.heartbeat.unref();
    const server = createServer((req, res) => void this.onRequest(req, res));
    server.on('upgrade', (req, socket, head) => this.onUpgrade(req, socket, head));
    server.on('clientError', (_err, socket) => socket.destroy());
    this.server = server;
    await new Promise<void>((resolve, reject) => {
      server.once('error', (err: NodeJS.ErrnoException) =>
        reject(
          new Error(
            `cannot listen on ${config.host}:${config.port}: ${err.code ?? err.message}; choose another server.port (BRAINSTEM_SERVER_PORT)`,
          ),
        ),
      );
      server.listen(config.port, config.host, () => resolve());
    });
    this.port = (server.address() as AddressInfo).port;
    this.log.info({ url: this.url(), ws: this.url('ws') + WS_PATH }, 'API listening');
  }

  protected async onStop(): Promise<void> {
    clearInterval(this.heartbeat);
    for (const ws of this.clients()) ws.close(1001, 'daemon stopping');
    this.wss?.close();
    const server = this.server;
    if (!server?.listening) return;
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeAllConnections();
    // Clients that ignore the close frame are cut off after a grace period.
    const grace = setTimeout(() => {
      for (const ws of this.clients()) ws.terminate();
    }, 1000);
    // Whatever still holds a socket after that cannot hold the daemon's stop.
    let late: NodeJS.Timeout | undefined;
    const limit = new Promise<boolean>((resolve) => (late = setTimeout(() => resolve(false), 3000)));
    if (!(await Promise.race([closed.then(() => true), limit])))
      this.log.warn('API server: connections still open 3 s after the stop began; stopping anyway');
    clearTimeout(grace);
    clearTimeout(late);
  }

  private pingAll(): void {
    // Console pages connected by a login that has since expired are closed here too.
    this.deps.sessions?.sweep();
    for (const ws of this.clients()) {
      if (!this.alive.has(ws)) {
        this.log.info('WebSocket client missed a heartbeat: disconnecting');
        ws.terminate();
        continue;
      }
      this.alive.delete(ws);
      ws.ping();
    }
  }

  private async onRequest(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = requestUrl(req);
    if (!url) {
      this.deps.metrics.httpRequests.inc({ route: '(unmatched)', method: req.method ?? '', status: 400 });
      return sendError(res, new HttpError(400, `the request target ${JSON.stringify(req.url)} is not a URL path`), {});
    }
    const match = this.deps.routes.match(req.method ?? 'GET', url.pathname);
    const label = 'route' in match ? match.route.path : url.pathname === WS_PATH ? WS_PATH : '(unmatched)';
    res.on('finish', () =>
      this.deps.metrics.httpRequests.inc({ route: label, method: req.method ?? '', status: res.statusCode }),
    );
    try {
      if (!this.hosts.allows(req.headers.host)) throw HostCheck.refusal(req.headers.host);
      const authenticated = this.limiter.check(req, presentedToken(req, url, false), this.deps.token, 'API token');
      // Auth before routing: without the token only routes marked public exist (no 404/405 oracle).
      const isPublic = 'route' in match && match.route.auth === false;
      if (!isPublic && !authenticated) throw unauthorized(url);
      if ('status' in match) {
        if (match.status === 405)
          throw new HttpError(
            405,
            `method ${req.method} is not allowed on ${url.pathname} (allowed: ${match.allow.join(', ')})`,
          );
        throw new HttpError(404, `no route ${req.method} ${url.pathname}`);
      }
      await match.route.handler(req, res, {
        url,
        params: match.params,
        log: this.log,
        maxBodyBytes: this.deps.config.max_message_bytes,
        authenticated,
        maxJsonDepth: this.deps.config.max_json_depth,
        stallMs: this.deps.config.http_stall_ms,
      });
    } catch (err) {
      const e =
        err instanceof HttpError
          ? err
          : new HttpError(500, `internal error: ${(err as Error)?.message ?? String(err)}`, 'server_error');
      // A client that went away cancels its request: its business, not a server failure.
      if (req.destroyed || res.destroyed) this.log.debug({ path: url.pathname, err: e.message }, 'client went away');
      else if (e.status >= 500) this.log.error({ err, path: url.pathname }, 'route failed');
      const headers: Record<string, string> =
        e.status === 401 ? { 'www-authenticate': 'Bearer realm="brainstem"' } : {};
      if (e.status === 413) headers.connection = 'close';
      if (e.status === 405 && 'allow' in match) headers.allow = match.allow.join(', ');
      sendError(res, e, headers);
    }
  }

  private onUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    const refuse = (status: number, reason: string, headers = '') => {
      // Destroyed once the answer is out: a client that never closes its side keeps no socket.
      socket.once('finish', () => socket.destroy());
      socket.end(`HTTP/1.1 ${status} ${reason}\r\nConnection: close\r\n${headers}Content-Length: 0\r\n\r\n`);
      this.deps.metrics.httpRequests.inc({ route: WS_PATH, method: 'UPGRADE', status });
    };
    socket.on('error', () => socket.destroy());
    const url = requestUrl(req);
    if (!url) return refuse(400, 'Bad Request');
    if (!this.hosts.allows(req.headers.host)) {
      this.log.warn({ remote: req.socket.remoteAddress, host: req.headers.host }, 'WebSocket refused: foreign Host');
      return refuse(421, 'Misdirected Request');
    }
    // Browsers send Origin with every upgrade: another site's page may neither guess the token nor
    // spend the shared wrong-token budget (which would lock out local apps), so it is not counted.
    if (!HostCheck.originAllowed(req.headers.origin, req.headers.host, this.deps.config.allowed_origins)) {
      this.log.warn(
        { remote: req.socket.remoteAddress, origin: req.headers.origin },
        'WebSocket refused: foreign Origin',
      );
      return refuse(403, 'Forbidden');
    }
    const byCookie = url.pathname === WS_PATH && this.deps.sessions?.upgradeAllowed(req) === true;
    let tokenOk: boolean;
    try {
      tokenOk = byCookie || this.limiter.check(req, presentedToken(req, url, true), this.deps.token, 'WebSocket token');
    } catch (err) {
      const wait = (err as HttpError).more.headers?.['retry-after'];
      this.log.warn({ remote: req.socket.remoteAddress }, `WebSocket refused: ${(err as Error).message}`);
      return refuse(429, 'Too Many Requests', `Retry-After: ${wait}\r\n`);
    }
    if (!tokenOk) {
      this.log.warn({ remote: req.socket.remoteAddress }, 'WebSocket refused: missing or wrong token');
      return refuse(401, 'Unauthorized');
    }
    const endpoint = this.endpoints.get(url.pathname);
    if (url.pathname !== WS_PATH && !endpoint) return refuse(404, 'Not Found');
    (endpoint?.wss ?? this.wss!).handleUpgrade(req, socket, head, (ws) => {
      const id = `c${this.nextConn++}`;
      this.log.debug({ conn: id, path: url.pathname }, 'WebSocket connected');
      this.alive.add(ws);
      ws.on('pong', () => this.alive.add(ws));
      // A console page's connection ends with its login (logout, expiry).
      if (byCookie)
        ws.on(
          'close',
          this.deps.sessions!.onRevoke(req, (why) => ws.close(1008, why)),
        );
      if (endpoint) return endpoint.accept(ws, req);
      new RpcConnection(id, ws, this.deps.rpc, this.deps.metrics, this.deps.logs.get('api.rpc'), {
        maxBatch: this.deps.config.max_batch_calls,
        maxDepth: this.deps.config.max_json_depth,
        pauseBytes: this.deps.config.ws_pause_bytes,
        maxBufferedBytes: this.deps.config.ws_max_buffered_bytes,
        share: this.share,
        backlog: this.backlog,
        subscriptions: this.subscriptions,
      });
    });
  }
}

/** The request target as a URL: a path ("//x" included: origin-form is always a path) or an
 *  absolute URL; null for anything else, which the caller answers with 400. */
function requestUrl(req: IncomingMessage): URL | null {
  const target = req.url ?? '/';
  try {
    return target.startsWith('/') ? new URL(`http://localhost${target}`) : new URL(target);
  } catch {
    return null;
  }
}
