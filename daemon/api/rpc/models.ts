// The models.* JSON-RPC methods: list, status (with memory), load (with progress notifications)
// and unload.
import { duration, durationMs } from '../../engine/config.js';
import type { LoadProgress, ModelRegistry } from '../../engine/model-registry.js';
import { memoryStats } from '../../util/proc-stats.js';
import { obj, optional, str } from '../../../robot/common/validation/builders.js';
import { toRpcError } from '../serving-errors.js';
import type { RpcContext, RpcRegistry } from './registry.js';

export const PROGRESS_NOTIFICATION = 'models.progress';

/** Sends load progress to this client, skipping samples while its socket is backed up. */
export function progressNotifier(ctx: RpcContext): (p: LoadProgress) => void {
  return (p) => {
    if (ctx.bufferedAmount < 1 << 20) ctx.notify(PROGRESS_NOTIFICATION, p);
  };
}

/** Runs a method body, turning serving errors into their JSON-RPC errors. */
export async function rpcCall<T>(fn: () => T | Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    throw toRpcError(err);
  }
}

export function registerModelMethods(rpc: RpcRegistry, registry: ModelRegistry): void {
  const model = str({ nonEmpty: true, doc: 'a configured model name' });
  rpc.register(
    'models.list',
    obj({}),
    () => ({
      models: registry.statuses().map((s) => ({
        name: s.name,
        path: s.path,
        state: s.state,
        context_length: s.profile.context_length || null,
        inputs: s.inputs,
        loaded_at: s.loaded_at,
      })),
    }),
    'configured models with their load state',
  );
  rpc.register(
    'models.status',
    obj({ model: optional(model) }),
    (p) =>
      rpcCall(() => {
        const m = memoryStats();
        return {
          models: p.model === undefined ? registry.statuses() : [registry.statusOf(p.model)],
          // Process-wide: the weights are file-backed (RssFile), KV caches and buffers anonymous.
          memory: {
            rss_bytes: m.rssBytes,
            rss_anon_bytes: m.rssAnonBytes,
            rss_file_bytes: m.rssFileBytes,
            peak_rss_bytes: m.peakRssBytes,
          },
        };
      }),
    'per model: state, load progress, profile, queue, sessions, memory; process memory',
  );
  rpc.register(
    'models.load',
    obj({ model, keep_alive: optional(duration({ doc: 'keep-alive after this load' })) }),
    (p, ctx) =>
      rpcCall(() =>
        registry.load(p.model, {
          keepAliveMs: p.keep_alive === undefined ? undefined : durationMs(p.keep_alive),
          onProgress: progressNotifier(ctx),
          signal: ctx.signal,
        }),
      ),
    `loads a model now, sending ${PROGRESS_NOTIFICATION} notifications; resolves with its status`,
  );
  rpc.register(
    'models.unload',
    obj({ model }),
    (p) => rpcCall(() => registry.unload(p.model)),
    'unloads a model once the requests queued for it are done',
  );
}
