// The adapters.* JSON-RPC methods: list, load and unload LoRA adapters of a model while it stays
// loaded (adapters.load loads the model first when it is not). The registry remembers them, so a
// model unloaded after its keep-alive gets them back on its next load. Chat requests then pick one
// by name (the chat param `adapter`, or the model name "model:adapter").
import { RpcCode, RpcError, type RpcRegistry } from './registry.js';
import { progressNotifier, rpcCall } from './models.js';
import { obj, oneOf, optional, str } from '../../../robot/common/validation/builders.js';
import type { ModelRegistry } from '../../engine/model-registry.js';
import { ADAPTER_FORMATS } from '../../engine/adapters/plan.js';

export type AdapterRegistry = Pick<ModelRegistry, 'names' | 'loadAdapter' | 'unloadAdapter' | 'adapterStatus'>;

export function registerAdapterMethods(rpc: RpcRegistry, registry: AdapterRegistry): void {
  const modelOf = (model: string | undefined): string => {
    const names = registry.names();
    if (model !== undefined) return model;
    if (names.length === 1) return names[0]!;
    throw new RpcError(
      RpcCode.INVALID_PARAMS,
      `Invalid params: model: is required when ${names.length} models are configured (${names.join(', ') || 'none'})`,
      { field: 'model', rule: 'required' },
    );
  };
  const model = optional(str({ nonEmpty: true, doc: 'a configured model name (default: the only one)' }));
  const name = str({ nonEmpty: true, doc: 'adapter name (1-64 letters, digits, . _ -)' });

  rpc.register(
    'adapters.list',
    obj({ model }),
    (p) =>
      rpcCall(() => {
        const m = modelOf(p.model);
        const adapters = registry.adapterStatus(m);
        return { model: m, adapters, bytes: adapters.reduce((n, a) => n + a.bytes, 0) };
      }),
    'LoRA adapters of a model: name, source, format, loaded, modules, ranks, bytes',
  );
  rpc.register(
    'adapters.load',
    obj({
      model,
      name,
      path: str({ nonEmpty: true, doc: 'adapter folder or file on the daemon host (PEFT, mlx-lm or Edge0)' }),
      format: optional(oneOf(ADAPTER_FORMATS, { doc: 'force a format instead of detecting it' })),
    }),
    (p, ctx) =>
      rpcCall(async () => {
        const m = modelOf(p.model);
        const adapter = await registry.loadAdapter(
          m,
          p.name,
          { path: p.path, ...(p.format ? { format: p.format } : {}) },
          { signal: ctx.signal, onProgress: progressNotifier(ctx) },
        );
        return { model: m, adapter };
      }),
    'reads and loads a LoRA adapter for a model (loading the model if needed; it stays loaded)',
  );
  rpc.register(
    'adapters.unload',
    obj({ model, name }),
    (p) =>
      rpcCall(() => {
        const m = modelOf(p.model);
        return { model: m, adapter: registry.unloadAdapter(m, p.name) };
      }),
    'drops a LoRA adapter; sessions running with it keep it until they switch',
  );
}
