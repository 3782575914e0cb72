// GET /health (public: 200 when ready, 503 while starting, stopping or failed; JSON per service)
// and GET /metrics (Prometheus text, token required).
import type { DaemonHealth } from '../daemon.js';
import { sendJson } from './http.js';
import type { Metrics } from './metrics.js';
import type { HttpRoutes } from './routes.js';

export function registerStatusRoutes(routes: HttpRoutes, metrics: Metrics, health: () => DaemonHealth): void {
  routes.add({
    method: 'GET',
    path: '/health',
    auth: false,
    handler: (_req, res) => {
      const h = health();
      sendJson(res, h.ready ? 200 : 503, h);
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
