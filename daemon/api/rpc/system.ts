// The system.* JSON-RPC methods: info, health, and periodic telemetry subscriptions.
import type { DaemonHealth } from '../../daemon.js';
import { int, obj, str } from '../../../robot/common/validation/builders.js';
import { RpcCode, RpcError, type RpcRegistry } from './registry.js';
import { TelemetrySampler } from './telemetry.js';

export interface SystemDeps {
  rpc: RpcRegistry;
  health: () => DaemonHealth;
  /** Facts about this daemon (version, native backends, MQTT...), gathered at call time. */
  info: () => Record<string, unknown>;
}

export const TELEMETRY_NOTIFICATION = 'system.telemetry';

export function registerSystemMethods({ rpc, health, info }: SystemDeps): void {
  const noParams = obj({});
  rpc.register(
    'system.info',
    noParams,
    () => ({ ...info(), methods: rpc.names() }),
    'daemon version, platform, native backends, MQTT and the method list',
  );
  rpc.register('system.health', noParams, () => health(), 'the same per-service health as GET /health');

  // Subscriptions live on their connection: id → stop function.
  const subs = new Map<string, () => void>();
  let next = 1;
  rpc.register(
    'system.subscribe',
    obj({ interval_ms: int({ min: 100, max: 3_600_000, default: 1000, doc: 'time between notifications' }) }),
    ({ interval_ms }, ctx) => {
      // First: a refused subscription starts nothing.
      const end = ctx.subscribe(() => stop());
      const id = `telemetry-${next++}`;
      const sampler = new TelemetrySampler();
      let seq = 0;
      const timer = setInterval(() => {
        // A client that does not read gets no more queued samples than one interval's worth.
        if (ctx.bufferedAmount > 1 << 20) return;
        ctx.notify(TELEMETRY_NOTIFICATION, {
          subscription: id,
          seq: seq++,
          health: health().status,
          ...sampler.sample(),
        });
      }, interval_ms);
      timer.unref();
      const stop = () => {
        clearInterval(timer);
        sampler.close();
        subs.delete(`${ctx.connectionId}/${id}`);
        end();
      };
      subs.set(`${ctx.connectionId}/${id}`, stop);
      return { subscription: id, interval_ms, notification: TELEMETRY_NOTIFICATION };
    },
    `sends ${TELEMETRY_NOTIFICATION} notifications every interval_ms until unsubscribed or closed`,
  );
  rpc.register(
    'system.unsubscribe',
    obj({ subscription: str({ nonEmpty: true }) }),
    ({ subscription }, ctx) => {
      const stop = subs.get(`${ctx.connectionId}/${subscription}`);
      if (!stop)
        throw new RpcError(
          RpcCode.INVALID_PARAMS,
          `Invalid params: subscription: is not an active subscription of this connection, got ${JSON.stringify(subscription)}`,
          { field: 'subscription', rule: 'must be an active subscription' },
        );
      stop();
      return { unsubscribed: subscription };
    },
    'stops a system.subscribe subscription',
  );
}
