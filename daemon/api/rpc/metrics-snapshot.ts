// system.metrics: the daemon's own Prometheus metrics (brainstem_*) as JSON, for clients on the
// WebSocket (the console's model sparklines) that have no Bearer header to read GET /metrics.
import type { Registry } from 'prom-client';
import { obj, optional, str } from '../../../robot/common/validation/builders.js';
import type { RpcRegistry } from './registry.js';

export function registerMetricsMethod(rpc: RpcRegistry, registry: Registry): void {
  rpc.register(
    'system.metrics',
    obj({ prefix: optional(str({ doc: 'only metrics whose name starts with this (default brainstem_)' })) }),
    async ({ prefix }) => {
      const want = prefix ?? 'brainstem_';
      const all = await registry.getMetricsAsJSON();
      return {
        time: Date.now() / 1000,
        metrics: all
          .filter((m) => m.name.startsWith(want) && String(m.type) !== 'histogram')
          .map((m) => ({
            name: m.name,
            type: m.type,
            values: m.values.map((v) => ({ labels: v.labels, value: v.value })),
          })),
      };
    },
    'counters and gauges of GET /metrics whose name starts with prefix (brainstem_ by default), as JSON',
  );
}
