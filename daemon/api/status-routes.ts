// GET /health (public: 200 when ready, 503 while starting, stopping or failed; without the token
// only {status, ready}, with it JSON per service and ?model=NAME: 200 when that model is loaded,
// 503 while it loads or is not loaded, 404 unknown) and GET /metrics (Prometheus text, token required).
import type { DaemonHealth } from '../daemon.js';
import { unauthorized } from './auth.js';
import { HttpError, sendJson } from './http.js';
import type { Metrics } from './metrics.js';
import type { HttpRoutes } from './routes.js';

export type ModelHealthLookup = (name: string) => { ready: boolean } | undefined;

export function registerStatusRoutes(
  routes: HttpRoutes,
  metrics: Metrics,
  health: () => DaemonHealth,
  modelHealth?: ModelHealthLookup,
): void {
  routes.add({
    method: 'GET',
    path: '/health',
    auth: false,
    handler: (_req, res, ctx) => {
      const h = health();
      const name = ctx.url.searchParams.get('model');
      // Anyone may probe readiness; URLs, counts, model names and the rest need the token.
      if (!ctx.authenticated) {
        if (name !== null) throw unauthorized(ctx.url);
        return sendJson(res, h.ready ? 200 : 503, { status: h.status, ready: h.ready });
      }
      if (name === null || !modelHealth) return sendJson(res, h.ready ? 200 : 503, h);
      const m = modelHealth(name);
      if (!m)
        throw new HttpError(404, `model "${name}" is not configured`, 'invalid_request_error', 'model', {
          code: 'model_not_found',
        });
      sendJson(res, h.ready && m.ready ? 200 : 503, { status: h.status, model: name, ...m });
    },
  });
  routes.add({
    method: 'GET',
    path: '/metrics',
    handler: async (_req, res) => {
      for (const [service, h] of Object.entries(health().services)) {
        metrics.serviceReady.set({ service }, h.status === 'ready' || h.status === 'degraded' ? 1 : 0);
      }
      const text = await metrics.registry.metrics();
      res.writeHead(200, { 'content-type': metrics.registry.contentType, 'cache-control': 'no-store' });
      res.end(text);
    },
  });
}
