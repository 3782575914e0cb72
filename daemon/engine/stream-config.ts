// The expert-streaming part of a model's profile: engine.* defaults and models.<name>.*
// overrides of the same keys (expert path per phase, slots, hot cache, I/O, prerouter), and the
// native loadModel options they become. `auto` (and 0 for the sizes) takes the value the
// auto-size chooses from the memory budget and the model (stream-autosize.ts).
import { EXPERT_PATHS, IO_MODES, type ExpertPath, type IoMode, type LoadModelOptions } from '../native/binding.js';
import { int, oneOf, optional, str, type Node } from '../../robot/common/validation/builders.js';
import type { AutoStream } from './stream-autosize.js';

const PATHS = ['auto', ...EXPERT_PATHS] as const;
const MODES = ['auto', ...IO_MODES] as const;
type AutoPath = (typeof PATHS)[number];
type AutoMode = (typeof MODES)[number];

type Field<T> = (def?: T) => Node<T>;
const FIELDS = {
  prefill_path: ((d?: AutoPath) =>
    oneOf(PATHS, {
      default: d,
      doc: 'expert path of prompt processing; auto: whole-layer when the weights do not fit the memory budget and two whole layers fit beside the rest, else exact (see docs/streaming.md)',
    })) as Field<AutoPath>,
  decode_path: ((d?: AutoPath) =>
    oneOf(PATHS, {
      default: d,
      doc: 'expert path of token generation; auto: staged slots with direct reads while the page cache could hold < 75% of the experts and at least K slots fit, else exact through it (the measured grid, docs/streaming.md)',
    })) as Field<AutoPath>,
  slots: ((d?: number) =>
    int({
      min: 0,
      max: 1024,
      default: d,
      doc: 'staged slots per MoE layer (0 = sized from the memory budget and the expert size)',
    })) as Field<number>,
  cache_bytes: ((d?: number) =>
    int({
      min: 0,
      max: 2 ** 50,
      default: d,
      doc: 'bytes of hot-path resident experts over all MoE layers (0 = sized from the memory budget)',
    })) as Field<number>,
  io_threads: ((d?: number) =>
    int({
      min: 0,
      max: 64,
      default: d,
      doc: 'threads reading experts (0 = auto-sized: 32 when the model streams, 2 when resident)',
    })) as Field<number>,
  io_mode: ((d?: AutoMode) =>
    oneOf(MODES, {
      default: d,
      doc: 'page-cache (buffered reads, readahead off), direct (O_DIRECT / F_NOCACHE: the page cache is not polluted) or auto (direct with the staged path the auto-size picks, else page-cache)',
    })) as Field<AutoMode>,
  device_expert_bytes: ((d?: number) =>
    int({
      min: 0,
      max: 2 ** 50,
      default: d,
      doc: "bytes of CUDA device memory per session for routed experts (0 = 85% of the device's free memory less the dense weights and the KV cache); below the model's experts, a session keeps that many expert slots per MoE layer (docs/cuda.md)",
    })) as Field<number>,
  prerouter: ((d?: string) =>
    str({
      nonEmpty: true,
      default: d,
      doc: "off, on (zero-training heads built at load) or a heads .safetensors file (`brainstem prerouter calibrate`, fitting the model and its top_k); the predicted routing replaces the routers' at decode, so outputs change: `doctor` recommends it where memory is short",
    })) as Field<string>,
};

/** engine.*: the defaults every model starts from. */
export const streamEngineFields = {
  prefill_path: FIELDS.prefill_path('auto'),
  decode_path: FIELDS.decode_path('auto'),
  slots: FIELDS.slots(0),
  cache_bytes: FIELDS.cache_bytes(0),
  io_threads: FIELDS.io_threads(0),
  io_mode: FIELDS.io_mode('auto'),
  device_expert_bytes: FIELDS.device_expert_bytes(0),
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
  device_expert_bytes: optional(FIELDS.device_expert_bytes()),
  prerouter: optional(FIELDS.prerouter()),
};

export interface StreamProfile {
  prefillPath: AutoPath;
  decodePath: AutoPath;
  /** 0: auto-sized (so are cacheBytes and ioThreads). */
  slots: number;
  cacheBytes: number;
  ioThreads: number;
  ioMode: AutoMode;
  /** 0: from the CUDA device's free memory. */
  deviceExpertBytes: number;
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
    deviceExpertBytes: m.device_expert_bytes ?? e.device_expert_bytes,
    prerouter: m.prerouter ?? e.prerouter,
  };
}

/** Whether any key is left to the auto-size. */
export const needsAuto = (p: StreamProfile) =>
  p.prefillPath === 'auto' ||
  p.decodePath === 'auto' ||
  p.ioMode === 'auto' ||
  p.slots === 0 ||
  p.cacheBytes === 0 ||
  p.ioThreads === 0;

/** Load options: set keys as given, auto ones from `auto()` (called only when some key is auto). */
export function streamLoadOptions(p: StreamProfile, auto?: () => AutoStream | undefined): LoadModelOptions {
  const a = needsAuto(p) ? auto?.() : undefined;
  const path = (v: AutoPath, fallback: ExpertPath | undefined): ExpertPath | undefined => (v === 'auto' ? fallback : v);
  const prefillPath = path(p.prefillPath, a?.prefillPath);
  const decodePath = path(p.decodePath, a?.decodePath);
  const ioMode: IoMode | undefined = p.ioMode === 'auto' ? a?.ioMode : p.ioMode;
  const slots = p.slots || a?.slots || 0;
  const cacheBytes = p.cacheBytes || a?.cacheBytes || 0;
  const ioThreads = p.ioThreads || a?.ioThreads || 0;
  return {
    ...(prefillPath ? { prefillPath } : {}),
    ...(decodePath ? { decodePath } : {}),
    ...(slots > 0 ? { slots } : {}),
    ...(cacheBytes > 0 ? { cacheBytes } : {}),
    ...(ioThreads > 0 ? { ioThreads } : {}),
    ...(ioMode ? { ioMode } : {}),
    ...(p.deviceExpertBytes > 0 ? { deviceExpertBytes: p.deviceExpertBytes } : {}),
    // The auto-size's chunk goes with its prefill path (a path set by hand keeps the engine's chunk).
    ...(a && prefillPath === a.prefillPath ? { prefillChunk: a.prefillChunk } : {}),
    prerouter: p.prerouter,
  };
}
