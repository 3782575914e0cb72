// The adapters.* JSON-RPC methods: list, load and unload LoRA adapters of a loaded model while it
// stays loaded. The model registry hands in which models are loaded and their AdapterManagers;
// chat requests then pick an adapter by name (the chat `adapter` param, HTTP model "model:adapter").
import { RpcCode, RpcError, type RpcRegistry } from '../../api/rpc/registry.js';
import { obj, oneOf, optional, str } from '../../util/schema.js';
import { EngineError } from '../native-model.js';
import { AdapterNotFoundError, type AdapterInfo, type AdapterManager } from './adapter-manager.js';
import { ADAPTER_FORMATS, AdapterError } from './plan.js';

/** The loaded models whose adapters the methods manage. */
export interface AdapterModels {
  /** Ids of the loaded models that take adapters. */
  ids(): string[];
  adapters(model: string): AdapterManager | undefined;
}

const invalid = (field: string, rule: string, message: string) => new RpcError(RpcCode.INVALID_PARAMS, `Invalid params: ${field}: ${message}`, { field, rule });

export function registerAdapterMethods(rpc: RpcRegistry, models: AdapterModels): void {
  const managerOf = (model: string | undefined): { model: string; adapters: AdapterManager } => {
    const ids = models.ids();
    const id = model ?? (ids.length === 1 ? ids[0] : undefined);
    if (id === undefined) throw invalid('model', 'is required when not exactly one model is loaded', `is required when ${ids.length} models are loaded (${ids.join(', ') || 'none'})`);
    const adapters = models.adapters(id);
    if (!adapters) throw invalid('model', 'must be a loaded model', `is not a loaded model (loaded: ${ids.join(', ') || 'none'}), got ${JSON.stringify(id)}`);
    return { model: id, adapters };
  };
  const model = optional(str({ nonEmpty: true, doc: 'loaded model id (default: the only loaded model)' }));
  const name = str({ nonEmpty: true, doc: 'adapter name (letters, digits, . _ -)' });
  const guard = async (field: string, fn: () => AdapterInfo | Promise<AdapterInfo>): Promise<AdapterInfo> => {
    try {
      return await fn();
    } catch (e) {
      if (e instanceof AdapterNotFoundError) throw invalid('name', 'must be a loaded adapter', e.message);
      if (e instanceof AdapterError || e instanceof EngineError) throw invalid(field, 'must be a valid adapter', e.message);
      throw e;
    }
  };

  rpc.register(
    'adapters.list',
    obj({ model }),
    ({ model: m }) => {
      const { model: id, adapters } = managerOf(m);
      return { model: id, adapters: adapters.list(), bytes: adapters.bytes() };
    },
    'LoRA adapters resident for a model: name, format, modules, ranks, bytes',
  );
  rpc.register(
    'adapters.load',
    obj({
      model,
      name,
      path: str({ nonEmpty: true, doc: 'adapter folder or file on the daemon host (PEFT, mlx-lm or Edge0)' }),
      format: optional(oneOf(ADAPTER_FORMATS, { doc: 'force a format instead of detecting it' })),
    }),
    async ({ model: m, name: n, path, format }) => {
      const { model: id, adapters } = managerOf(m);
      return { model: id, adapter: await guard('path', () => adapters.load(n, path, format)) };
    },
    'reads and loads a LoRA adapter for a loaded model (the model stays loaded)',
  );
  rpc.register(
    'adapters.unload',
    obj({ model, name }),
    async ({ model: m, name: n }) => {
      const { model: id, adapters } = managerOf(m);
      return { model: id, adapter: await guard('name', () => adapters.unload(n)) };
    },
    'drops a LoRA adapter; sessions running with it keep it until they switch',
  );
}
