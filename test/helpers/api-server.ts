// A bare API server (no models, robots or broker) on a free loopback port, for tests of the
// transport itself: the registry, routes, console sessions and token limiter are the test's.
import { request } from 'node:http';
import { ApiServer } from '../../daemon/api/server.js';
import { AuthLimiter } from '../../daemon/api/auth-limiter.js';
import { Metrics } from '../../daemon/api/metrics.js';
import { HttpRoutes } from '../../daemon/api/routes.js';
import { RpcRegistry } from '../../daemon/api/rpc/registry.js';
import { loadConfig } from '../../daemon/config/load.js';
import type { ConsoleSessions } from '../../daemon/console/sessions.js';
import { Logs } from '../../daemon/log.js';

export const API_TOKEN = 'api-token-0123456789abcdef';

export async function startApiServer(
  server: Record<string, unknown> = {},
  parts: { rpc?: RpcRegistry; routes?: HttpRoutes; sessions?: ConsoleSessions; limiter?: AuthLimiter } = {},
): Promise<{ api: ApiServer; rpc: RpcRegistry; routes: HttpRoutes; port: number }> {
  const config = loadConfig({ env: {}, overrides: [{ server: { port: 0, ...server } }] });
  const rpc = parts.rpc ?? new RpcRegistry();
  const routes = parts.routes ?? new HttpRoutes();
  const api = new ApiServer({
    config: config.server,
    token: API_TOKEN,
    logs: new Logs({ ...config.logging, level: 'silent' }),
    routes,
    rpc,
    metrics: new Metrics(),
    limiter: parts.limiter ?? new AuthLimiter(),
    ...(parts.sessions ? { sessions: parts.sessions } : {}),
  });
  await api.start();
  return { api, rpc, routes, port: api.address().port };
}

export interface RawReply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** One HTTP request to 127.0.0.1:port with these headers (Host too when given); a promised body is sent when it resolves. */
export function httpTo(
  port: number,
  path: string,
  opts: { method?: string; headers?: Record<string, string>; body?: string | Promise<string> } = {},
): Promise<RawReply> {
  return new Promise((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port, path, method: opts.method ?? 'GET', headers: opts.headers },
      (res) => {
        let body = '';
        res.on('data', (c) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      },
    );
    req.on('error', reject);
    if (typeof opts.body === 'object') {
      req.flushHeaders();
      void opts.body.then((b) => req.end(b));
    } else req.end(opts.body);
  });
}
