// The HTTP route registry: later parts of the daemon add routes (e.g. POST /v1/chat/completions).
// Paths are exact, with `:name` segments captured into params.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from '../log.js';

export interface RouteContext {
  url: URL;
  params: Record<string, string>;
  log: Logger;
  /** Largest body a handler should read (server.max_message_bytes); use readBody/readJson. */
  maxBodyBytes: number;
  /** The request carried the API token (public routes use it to decide how much to say). */
  authenticated: boolean;
  /** Deepest nesting a JSON body may have (server.max_json_depth); pass it to readJson. */
  maxJsonDepth: number;
  /** How long a streamed reply waits for a client to read before giving up (server.http_stall_ms). */
  stallMs: number;
}

export type RouteHandler = (req: IncomingMessage, res: ServerResponse, ctx: RouteContext) => void | Promise<void>;

export interface Route {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE' | 'PATCH';
  path: string;
  handler: RouteHandler;
  /** Needs the API token (default true); `false` marks a public route, served without it. */
  auth?: boolean;
}

export type RouteMatch =
  | { route: Route; params: Record<string, string> }
  | { status: 404 }
  | { status: 405; allow: string[] };

const segments = (path: string) => path.split('/').filter((s) => s !== '');

function matchPath(pattern: string[], path: string[]): Record<string, string> | undefined {
  if (pattern.length !== path.length) return undefined;
  const params: Record<string, string> = {};
  for (let i = 0; i < pattern.length; i++) {
    const p = pattern[i]!;
    if (p.startsWith(':')) params[p.slice(1)] = decodeURIComponent(path[i]!);
    else if (p !== path[i]) return undefined;
  }
  return params;
}

export class HttpRoutes {
  private readonly routes: { route: Route; pattern: string[] }[] = [];

  add(route: Route): void {
    const pattern = segments(route.path);
    const key = pattern.map((s) => (s.startsWith(':') ? ':' : s)).join('/');
    const clash = this.routes.find(
      (r) => r.route.method === route.method && r.pattern.map((s) => (s.startsWith(':') ? ':' : s)).join('/') === key,
    );
    if (clash) throw new Error(`route ${route.method} ${route.path} is already registered (as ${clash.route.path})`);
    this.routes.push({ route, pattern });
  }

  list(): { method: string; path: string; auth: boolean }[] {
    return this.routes.map(({ route }) => ({ method: route.method, path: route.path, auth: route.auth !== false }));
  }

  /** HEAD is served by GET routes. */
  match(method: string, pathname: string): RouteMatch {
    const path = segments(pathname);
    const wanted = method === 'HEAD' ? 'GET' : method;
    const allow: string[] = [];
    for (const { route, pattern } of this.routes) {
      let params: Record<string, string> | undefined;
      try {
        params = matchPath(pattern, path);
      } catch {
        continue; // malformed %-escape in a param segment: no match
      }
      if (!params) continue;
      if (route.method === wanted) return { route, params };
      allow.push(route.method);
    }
    return allow.length > 0 ? { status: 405, allow } : { status: 404 };
  }
}
