// The engine profile: how a model's experts are streamed (config `engine.profile`, overridable
// per model as `models.<name>.profile` with the same keys). `profileLoadOptions` turns it into
// the native loadModel options; `doctor` recommends values for the machine's memory.
import { EXPERT_PATHS, IO_MODES, type LoadModelOptions } from '../native/binding.js';
import { int, obj, oneOf, parseOrThrow, str, type Infer } from '../util/schema.js';

export const engineProfileSchema = obj(
  {
    routing_k: int({ min: 0, max: 1024, default: 0, doc: "routing width K (experts per token); 0 = the model's num_experts_per_tok" }),
    prefill_path: oneOf(EXPERT_PATHS, { default: 'exact', doc: 'expert path of prompt processing' }),
    decode_path: oneOf(EXPERT_PATHS, { default: 'staged', doc: 'expert path of token generation' }),
    slots: int({ min: 0, max: 1024, default: 0, doc: 'staged slots per MoE layer; 0 = K' }),
    cache_bytes: int({ min: 0, max: 2 ** 50, default: 0, doc: 'bytes of hot-path resident experts over all MoE layers; 0 = 2·K per layer' }),
    io_threads: int({ min: 1, max: 64, default: 4, doc: 'threads reading experts' }),
    io_mode: oneOf(IO_MODES, { default: 'page-cache', doc: 'page-cache (buffered, readahead off) or direct (O_DIRECT / F_NOCACHE)' }),
    prerouter: str({ nonEmpty: true, default: 'on', doc: 'off, on (zero-training heads) or a heads .safetensors file' }),
  },
  { doc: 'how experts stream from disk (defaults for every model)' },
);

export type EngineProfileConfig = Infer<typeof engineProfileSchema>;

/** The profile of model `name`: its `models.<name>.profile` keys over `engine.profile`, checked. */
export function modelProfile(engine: EngineProfileConfig, override: unknown, name: string): EngineProfileConfig {
  const merged = override === undefined ? engine : { ...engine, ...(override as Record<string, unknown>) };
  return parseOrThrow(engineProfileSchema, merged, `models.${name}.profile`);
}

export function profileLoadOptions(p: EngineProfileConfig): LoadModelOptions {
  return {
    ...(p.routing_k > 0 ? { topK: p.routing_k } : {}),
    prefillPath: p.prefill_path,
    decodePath: p.decode_path,
    ...(p.slots > 0 ? { slots: p.slots } : {}),
    ...(p.cache_bytes > 0 ? { cacheBytes: p.cache_bytes } : {}),
    ioThreads: p.io_threads,
    ioMode: p.io_mode,
    prerouter: p.prerouter,
  };
}
