// The expert-streaming part of a model's profile: engine.* defaults and models.<name>.*
// overrides of the same keys (expert path per phase, slots, hot cache, I/O, prerouter), and the
// native loadModel options they become.
import { EXPERT_PATHS, IO_MODES, type ExpertPath, type IoMode, type LoadModelOptions } from '../native/binding.js';
import { int, oneOf, optional, str, type Node } from '../../robot/common/validation/builders.js';

type Field<T> = (def?: T) => Node<T>;
const FIELDS = {
  prefill_path: ((d?: ExpertPath) =>
    oneOf(EXPERT_PATHS, {
      default: d,
      doc: 'expert path of prompt processing (see docs/streaming.md)',
    })) as Field<ExpertPath>,
  decode_path: ((d?: ExpertPath) =>
    oneOf(EXPERT_PATHS, { default: d, doc: 'expert path of token generation' })) as Field<ExpertPath>,
  slots: ((d?: number) =>
    int({
      min: 0,
      max: 1024,
      default: d,
      doc: 'staged slots per MoE layer (0 = the routing width K)',
    })) as Field<number>,
  cache_bytes: ((d?: number) =>
    int({
      min: 0,
      max: 2 ** 50,
      default: d,
      doc: 'bytes of hot-path resident experts over all MoE layers (0 = 2·K per layer)',
    })) as Field<number>,
  io_threads: ((d?: number) => int({ min: 1, max: 64, default: d, doc: 'threads reading experts' })) as Field<number>,
  io_mode: ((d?: IoMode) =>
    oneOf(IO_MODES, {
      default: d,
      doc: 'page-cache (buffered reads, readahead off) or direct (O_DIRECT / F_NOCACHE: the page cache is not polluted)',
    })) as Field<IoMode>,
  prerouter: ((d?: string) =>
    str({
      nonEmpty: true,
      default: d,
      doc: "off, on (zero-training heads built at load) or a heads .safetensors file (`brainstem prerouter calibrate`, fitting the model and its top_k); the predicted routing replaces the routers' at decode, so outputs change: `doctor` recommends it where memory is short",
    })) as Field<string>,
};

/** engine.*: the defaults every model starts from. */
export const streamEngineFields = {
  prefill_path: FIELDS.prefill_path('exact'),
  decode_path: FIELDS.decode_path('staged'),
  slots: FIELDS.slots(0),
  cache_bytes: FIELDS.cache_bytes(0),
  io_threads: FIELDS.io_threads(4),
  io_mode: FIELDS.io_mode('page-cache'),
  // The prediction is the routing: outputs change, so the prerouter is opt-in (doctor recommends it
  // where memory is short).
  prerouter: FIELDS.prerouter('off'),
};

/** models.<name>.*: the same keys, each optional. */
export const streamModelFields = {
  prefill_path: optional(FIELDS.prefill_path()),
  decode_path: optional(FIELDS.decode_path()),
  slots: optional(FIELDS.slots()),
  cache_bytes: optional(FIELDS.cache_bytes()),
  io_threads: optional(FIELDS.io_threads()),
  io_mode: optional(FIELDS.io_mode()),
  prerouter: optional(FIELDS.prerouter()),
};

export interface StreamProfile {
  prefillPath: ExpertPath;
  decodePath: ExpertPath;
  slots: number;
  cacheBytes: number;
  ioThreads: number;
  ioMode: IoMode;
  prerouter: string;
}

type EngineStream = {
  [K in keyof typeof streamEngineFields]: (typeof streamEngineFields)[K] extends Node<infer T> ? T : never;
};
type ModelStream = Partial<EngineStream>;

/** A model's streaming keys over the engine's. */
export function resolveStream(m: ModelStream, e: EngineStream): StreamProfile {
  return {
    prefillPath: m.prefill_path ?? e.prefill_path,
    decodePath: m.decode_path ?? e.decode_path,
    slots: m.slots ?? e.slots,
    cacheBytes: m.cache_bytes ?? e.cache_bytes,
    ioThreads: m.io_threads ?? e.io_threads,
    ioMode: m.io_mode ?? e.io_mode,
    prerouter: m.prerouter ?? e.prerouter,
  };
}

export function streamLoadOptions(p: StreamProfile): LoadModelOptions {
  return {
    prefillPath: p.prefillPath,
    decodePath: p.decodePath,
    ...(p.slots > 0 ? { slots: p.slots } : {}),
    ...(p.cacheBytes > 0 ? { cacheBytes: p.cacheBytes } : {}),
    ioThreads: p.ioThreads,
    ioMode: p.ioMode,
    prerouter: p.prerouter,
  };
}
