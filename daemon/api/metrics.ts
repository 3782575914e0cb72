// Prometheus metrics: one registry per daemon (so in-process test daemons do not collide),
// process and event-loop metrics from prom-client, and the daemon's own counters.
// Later parts add their metrics to `registry`.
import { collectDefaultMetrics, Counter, Gauge, Registry } from 'prom-client';

export class Metrics {
  readonly registry = new Registry();
  readonly httpRequests = new Counter({
    name: 'brainstem_http_requests_total',
    help: 'HTTP requests by route pattern, method and status code',
    labelNames: ['route', 'method', 'status'] as const,
    registers: [this.registry],
  });
  readonly wsConnections = new Gauge({
    name: 'brainstem_ws_connections',
    help: 'Open WebSocket connections',
    registers: [this.registry],
  });
  readonly rpcRequests = new Counter({
    name: 'brainstem_rpc_requests_total',
    help: 'JSON-RPC requests by method and outcome (ok or the JSON-RPC error code)',
    labelNames: ['method', 'outcome'] as const,
    registers: [this.registry],
  });
  readonly serviceReady = new Gauge({
    name: 'brainstem_service_ready',
    help: '1 when the service is ready or degraded, 0 otherwise',
    labelNames: ['service'] as const,
    registers: [this.registry],
  });

  constructor() {
    // Includes nodejs_eventloop_lag_seconds and the monitorEventLoopDelay percentiles (10 ms resolution).
    collectDefaultMetrics({ register: this.registry, eventLoopMonitoringPrecision: 10 });
  }

  /** Unknown method names are folded into one label so clients cannot grow the series set. */
  countRpc(method: string, known: boolean, outcome: string): void {
    this.rpcRequests.inc({ method: known ? method : '(unknown)', outcome });
  }
}
