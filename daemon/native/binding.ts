// The whole native surface, typed in one place, and the loader for the addon.
// Slow native calls return Promises (async workers); no C++ exception crosses into JS.
import { createRequire } from 'node:module';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { repoRoot } from '../util/repo-root.js';

export interface BackendInfo {
  name: string;
  compiled: boolean;
  usable: boolean;
  detail: string;
}

/** A compiled table of kernels (e.g. "cpu-ref"); loadModel's `backend` option picks one. */
export interface KernelSetInfo {
  name: string;
  usable: boolean;
  detail: string;
  /** Whether backend "auto" picks this set (CUDA only after its smoke test passed). */
  auto: boolean;
}

export interface NativeInfo {
  version: string;
  cpuFeatures: string;
  /** Devices: cpu always, metal / cuda when compiled. */
  backends: BackendInfo[];
  kernelSets: KernelSetInfo[];
  /** config.json `model_type` values the engine loads. */
  architectures: string[];
}

/** Opaque handles: tagged externals, checked natively on every call. */
declare const modelHandleBrand: unique symbol;
declare const sessionHandleBrand: unique symbol;
declare const adapterHandleBrand: unique symbol;
export type ModelHandle = { readonly [modelHandleBrand]: true };
export type SessionHandle = { readonly [sessionHandleBrand]: true };
export type AdapterHandle = { readonly [adapterHandleBrand]: true };

/** Activation bytes of the integer decode kernels ×8: 16 (default), 24 (~100× closer to exact), 8 (one byte, as Q8: ~1e-2 of the scale off, fastest). */
export type ActivationBits = 8 | 16 | 24;

export interface LoadModelOptions {
  /** CPU threads for the kernels (1..256, default 1). */
  threads?: number;
  /** Default context length of new sessions (default: max_position_embeddings). */
  contextLength?: number;
  /** Routing width K: experts per token (default: the config's num_experts_per_tok). */
  topK?: number;
  /** Kernel set by name, see NativeInfo.kernelSets, or "auto" (the default): the fastest usable
   *  CPU set (cpu-avx512 > cpu-avx2 on x86-64, cpu-neon-i8mm > cpu-neon-dotprod > cpu-neon on arm64, else
   *  cpu-ref), or cuda when a device of capability ≥ 7.2 passes the CUDA set's smoke test;
   *  metal is used only when named. */
  backend?: string;
  /** KV cache element type: "f32" (default) or "f16" (half the memory). */
  kvCache?: 'f32' | 'f16';
  /** Activation precision of the integer decode kernels (4-bit weights, one token): 16 bits
   *  (default; logits ~1e-4 of their scale from the float64 reference) or 24 (~1e-6, a half
   *  more dot products: ~10% slower decode on the 2-core x86 VM). */
  activationBits?: ActivationBits;
  /** Tokens per forward step of a prefill (1..4096, default 128): larger chunks give each
   *  routed expert longer runs of tokens for the prefill GEMM, at chunk-sized scratch. */
  prefillChunk?: number;
  /** Expert path of multi-token steps (prefill); default "exact". */
  prefillPath?: ExpertPath;
  /** Expert path of single-token steps (decode); default "exact". */
  decodePath?: ExpertPath;
  /** Staged slots per MoE layer (default: the routing width K). */
  slots?: number;
  /** Bytes of the hot path's resident experts over all MoE layers (default: 2·K experts per layer). */
  cacheBytes?: number;
  /** I/O threads that read experts (1..64, default 4). */
  ioThreads?: number;
  /** "page-cache" (default: buffered reads, readahead off) or "direct" (O_DIRECT / F_NOCACHE). */
  ioMode?: IoMode;
  /** "off" (default), "on" (zero-training heads built at load) or a heads .safetensors path. */
  prerouter?: string;
  /** Also run the true router where a prediction routes, to count prediction recall. */
  measureRecall?: boolean;
  /** Whole-layer prefill reads a layer whole only when the chunk routes to at least this share
   *  of its experts (0..1, default 0.7; 0: always); fewer run on the exact path. */
  wholeLayerShare?: number;
  /** CUDA: device bytes per session for routed experts (default: from the free memory); below
   *  the model's experts, sessions keep expert slots per MoE layer (docs/cuda.md). */
  deviceExpertBytes?: number;
  /** Sessions time each stage of their forward steps (SessionInfo.profile; bench decode --breakdown). */
  profile?: boolean;
  /** Map every weight page into the process on a background thread from load on, reading what
   *  the page cache lacks, so requests take few page faults (default false; the daemon sets it
   *  for resident models). */
  prefault?: boolean;
}

export const EXPERT_PATHS = ['exact', 'staged', 'hot', 'whole-layer'] as const;
export type ExpertPath = (typeof EXPERT_PATHS)[number];
export const IO_MODES = ['page-cache', 'direct'] as const;
export type IoMode = (typeof IO_MODES)[number];

/** The expert executor as loaded. */
export interface StreamSummary {
  prefillPath: ExpertPath;
  decodePath: ExpertPath;
  slots: number;
  /** Resident experts per layer of the hot path. */
  hotSlots: number;
  ioThreads: number;
  ioMode: IoMode;
  measureRecall: boolean;
  wholeLayerShare: number;
  /** CUDA sessions' routed-expert budget as loaded (0: from the device's free memory). */
  deviceExpertBytes: number;
  /** "zero-training", the heads file, or null when the prerouter is off. */
  prerouter: string | null;
  /** Layers owning a head (head N predicts layer N+1). */
  prerouterOwners: number[];
}

/** What the expert executor did during a session's forward passes (monotonic). */
export interface StreamStats {
  /** Time compute waited on expert loads and layer reads. */
  blockedNs: number;
  /** Bytes the I/O threads read. */
  ioBytes: number;
  loads: number;
  prefetchLoads: number;
  prefetchBytes: number;
  /** Prefetched expert bytes replaced before any use. */
  prefetchUnusedBytes: number;
  slotHits: number;
  slotMisses: number;
  /** Routed experts computed by the exact path instead of the chosen one. */
  fallbacks: number;
  /** Routed rows that hit the zero slot (0 by design). */
  drops: number;
  layerReads: number;
  /** Staged experts of a predicted routing that had not been prefetched (0 by design). */
  prefetchMisses: number;
  /** Routed experts whose pages were requested from the OS (WILLNEED); stops growing once no pass reads storage. */
  readHints: number;
  /** Page-cache paths: predicted experts the I/O threads read into the page cache ahead of their layer. */
  warmExperts: number;
  /** Bytes those warms read (pages that were not cached yet). */
  warmBytes: number;
  /** Routed experts whose warm had finished when their layer ran. */
  warmHits: number;
  /** MoE layer-steps routed by a prerouter prediction. */
  predictedLayers: number;
  recallHits: number;
  recallTotal: number;
  /** The model's slot and layer buffers (anonymous memory). */
  bufferBytes: number;
}

export interface ModelSummary {
  arch: string;
  vocabSize: number;
  hiddenSize: number;
  layers: number;
  moeLayers: number;
  heads: number;
  kvHeads: number;
  headDim: number;
  experts: number;
  /** Routing width in use. */
  topK: number;
  /** num_experts_per_tok from config.json. */
  configTopK: number;
  routing: 'softmax_topk' | 'sigmoid_group';
  maxPositions: number;
  contextLength: number;
  tieEmbeddings: boolean;
  eosTokenIds: number[];
  bosTokenId: number | null;
  files: number;
  /** Bytes of all tensors in the safetensors files. */
  fileBytes: number;
  /** Bytes of the weight matrices the engine uses (codes + scales + biases). */
  matrixBytes: number;
  /** Bytes of one routed expert (gate + up + down) of one layer. */
  expertBytes: number;
  backend: string;
  threads: number;
  kvCache: 'f32' | 'f16';
  activationBits: ActivationBits;
  prefillChunk: number;
  /** The weights are being mapped in the background (`prefault`; see NativeAddon.modelPrefault). */
  prefault: boolean;
  stream: StreamSummary;
}

/** The background mapping of a model's weights: `mapped` when every page is in the process,
 *  `advised` where the OS could only be asked to read them (no MADV_POPULATE_READ), `stopped`
 *  when the model went first. */
export interface PrefaultStatus {
  state: 'running' | 'mapped' | 'advised' | 'stopped';
  doneBytes: number;
  totalBytes: number;
  /** Routed experts whose first-use finiteness check ran after the mapping (a corrupt one is
   *  left to its first use, which reports it). */
  expertsChecked: number;
}

export interface LoadedModel {
  handle: ModelHandle;
  summary: ModelSummary;
}

export interface SessionInfo {
  disposed: boolean;
  busy: boolean;
  /** Tokens in the KV cache. */
  nPast: number;
  contextLength: number;
  /** Tokens run through the model since creation. */
  tokens: number;
  /** Weight bytes read since creation (each matrix / routed expert once per forward step). */
  weightBytes: number;
  /** Distinct experts computed, summed over layers and forward steps. */
  expertsComputed: number;
  /** Bytes of the KV cache (0 while busy). */
  stateBytes: number;
  stream: StreamStats;
  /** Name of the LoRA adapter the session runs with, null for the base model. */
  adapter: string | null;
  /** Routing width (experts per token) the session runs at; 0 once disposed. */
  topK: number;
  /** Whether its forward passes run on a device decoder (Metal: one command list per chunk, the KV
   *  cache on the GPU); false on the CPU kernel sets and after a hand-over (docs/metal.md). */
  onDevice: boolean;
  /** Stage times since creation, when the model was loaded with `profile` (after a first step). */
  profile?: StepProfile;
}

/** Stages of a forward step (native/common/step-profile.h). */
export const PROFILE_STAGES = [
  'embed',
  'norms_residual',
  'attn_proj',
  'attention',
  'linear_proj',
  'linear_recurrence',
  'router',
  'expert_sort',
  'gate_up',
  'silu_mul',
  'down',
  'combine',
  'dense_mlp',
  'lm_head',
] as const;
export type ProfileStage = (typeof PROFILE_STAGES)[number];

/** Totals over a session's forward steps: wall time of the calling thread per stage, the
 *  thread-pool loops each started and the caller's waits at their ends. */
export interface StepProfile {
  steps: number;
  stepNs: number;
  loops: number;
  waitNs: number;
  stages: Record<ProfileStage, { ns: number; loops: number; waitNs: number }>;
}

export interface CalibrateOptions {
  /** Owner layers to calibrate (head N predicts layer N+1); default every owner. */
  firstLayer?: number;
  lastLayer?: number;
  /** fc1 outputs per head (default 512, as Edge0's heads). */
  units?: number;
  /** Adam minibatch steps per head (default 300). */
  steps?: number;
  batch?: number;
  lr?: number;
  /** Optimiser threads. */
  threads?: number;
  seed?: number;
  /** Fraction of the tokens (the tail) kept out of training for the held-out recall (default 0.1). */
  heldOut?: number;
}

export interface CalibrationProgress {
  phase: 'record' | 'train';
  /** Tokens recorded, or steps trained over all heads. */
  done: number;
  total: number;
  owner: number | null;
  /** Cross-entropy of the last minibatch (train). */
  loss: number;
}

export interface HeadReport {
  owner: number;
  trainSamples: number;
  heldOutSamples: number;
  lossBefore: number;
  lossAfter: number;
  recallBefore: number;
  recallAfter: number;
  heldOutRecallBefore: number;
  heldOutRecallAfter: number;
}

/** Trained head weights in float32, rounded to fp16 values. */
export interface HeadTensors {
  owner: number;
  units: number;
  fc1: Float32Array;
  fc2: Float32Array;
  linear: Float32Array;
}

export interface CalibrationResult {
  tokens: number;
  reports: HeadReport[];
  heads: HeadTensors[];
}

export interface HeadEval {
  owner: number;
  samples: number;
  recall: number;
  zeroTrainingRecall: number;
}

/** One module of a LoRA load request: the normalised form every adapter format maps to. */
export interface AdapterModuleSpec {
  /** MLX module path of the base projection, e.g. model.layers.3.self_attn.q_proj. */
  module: string;
  /** Tensor names of A and B in the adapter file. */
  a: string;
  b: string;
  /** mlx-lm layout lora_a [in, r], lora_b [r, out]; otherwise A [r, in], B [out, r] (PEFT, Edge0). */
  transposed: boolean;
  /** y += scale · B(A x). */
  scale: number;
}

export interface AdapterSpec {
  name: string;
  /** The adapter's safetensors file. */
  file: string;
  modules: AdapterModuleSpec[];
}

export interface AdapterSummary {
  name: string;
  /** Bytes of A and B held in memory. */
  bytes: number;
  modules: { module: string; rank: number; scale: number; dtype: 'F16' | 'BF16' | 'F32' }[];
}

export interface LoadedAdapter {
  handle: AdapterHandle;
  summary: AdapterSummary;
}

export interface MembwOptions {
  threads?: number;
  /** Buffer size in MiB (default 256). */
  mib?: number;
  /** Passes; the best is reported (default 3). */
  passes?: number;
}

export interface MembwResult {
  threads: number;
  bytes: number;
  seconds: number;
  readGbS: number;
}

/** Image embeddings for one prefill: rows[r] (ascending indices into its tokens) take
 *  embeds[r·hidden ..]; after decoder layer l they add deepstack[(l·rows + r)·hidden ..];
 *  positions [3 × tokens] are the (time, height, width) RoPE positions of every token. */
export interface MultimodalPrefill {
  embeds: Float32Array;
  rows: Int32Array;
  deepstack?: Float32Array;
  positions?: Int32Array;
}

/** What a native promise rejects with: an Error, and for a refused load option its name and rule. */
export interface NativeError extends Error {
  option?: string;
  detail?: string;
}

export interface NativeAddon {
  info(): NativeInfo;
  /** Runs the GPU probes info() reads (CUDA's smoke test included) off the JS thread; they are
   *  cached, so info() after it is cheap. Resolves at once on a CPU-only build. */
  probeDevices(): Promise<void>;
  /** Maps the folder's safetensors read-only and checks every tensor against config.json. */
  loadModel(dir: string, opts?: LoadModelOptions): Promise<LoadedModel>;
  /** Sessions created earlier keep the mappings alive until they are disposed. */
  disposeModel(model: ModelHandle): void;
  /** The model's background mapping (null without `prefault`); cheap, synchronous. */
  modelPrefault(model: ModelHandle): PrefaultStatus | null;
  createSession(model: ModelHandle, opts?: { contextLength?: number }): Promise<SessionHandle>;
  /** Appends tokens to the session; resolves to the last token's logits [vocabSize]. With
   *  `multimodal`, image embeddings replace the listed rows (see MultimodalPrefill). */
  prefill(session: SessionHandle, tokens: Int32Array, multimodal?: MultimodalPrefill): Promise<Float32Array>;
  /** Appends one token; resolves to its logits [vocabSize]. */
  decode(session: SessionHandle, token: number): Promise<Float32Array>;
  /** Appends one token; resolves to the next greedy token (largest logit among ids below
   *  `vocabSize`, default all; lowest id on ties; -1 when none is above -Infinity) without
   *  copying the logits out (a device decoder returns only the id). */
  decodeGreedy(session: SessionHandle, token: number, vocabSize?: number): Promise<number>;
  /** Keeps the first nTokens of the KV cache. */
  truncate(session: SessionHandle, nTokens: number): Promise<void>;
  /** A snapshot taken after the last completed call. */
  sessionInfo(session: SessionHandle): SessionInfo;
  disposeSession(session: SessionHandle): void;
  /** Index of the largest logit (lowest index among equal maxima; NaN never wins); -1 when none is above -Infinity. */
  argmax(logits: Float32Array): number;
  /** out[i] = exp((logits[i] - max) / temperature) in double (0 for -Infinity and NaN); returns their sum in index order. */
  expShifted(logits: Float32Array, max: number, temperature: number, out: Float64Array): number;
  /** Records the model's routing over `tokens` and trains prerouter heads from the zero-training head. */
  prerouterCalibrate(
    model: ModelHandle,
    tokens: Int32Array,
    opts?: CalibrateOptions,
    onProgress?: (p: CalibrationProgress) => void,
  ): Promise<CalibrationResult>;
  /** Top-k recall of a heads file (and of the zero-training heads) over `tokens`. */
  prerouterEval(
    model: ModelHandle,
    tokens: Int32Array,
    heads: string,
    onProgress?: (p: CalibrationProgress) => void,
  ): Promise<HeadEval[]>;
  /** Drops the page-cache pages of whole files (POSIX_FADV_DONTNEED; cold-cache benchmarks). */
  dropPageCache(paths: string[]): Promise<void>;
  /** Checks the spec against the model (modules, shapes, dtypes) and copies A and B into memory. */
  loadAdapter(model: ModelHandle, spec: AdapterSpec): Promise<LoadedAdapter>;
  /** Drops the handle; sessions that run with the adapter keep it until they switch. */
  disposeAdapter(adapter: AdapterHandle): void;
  /** The adapter the session's next calls run with (null: the base model). Throws while busy. */
  setAdapter(session: SessionHandle, adapter: AdapterHandle | null): void;
  /** Routes later calls with the top `topK` experts per token (1 ≤ topK ≤ the model's K); throws RangeError outside. */
  setTopK(session: SessionHandle, topK: number): void;
  /** Memory read bandwidth with a native multi-threaded read loop. */
  membw(opts?: MembwOptions): Promise<MembwResult>;
}

export class NativeLoadError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'NativeLoadError';
  }
}

export const addonPath = join(repoRoot, 'build', 'Release', 'brainstem.node');

let cached: NativeAddon | undefined;

/** Loads the addon once; throws NativeLoadError naming the command that builds it. */
export function loadNative(): NativeAddon {
  if (cached) return cached;
  if (!existsSync(addonPath)) {
    throw new NativeLoadError(
      `native addon not found at ${addonPath}; build it with \`npm run build:native\` (needs cmake and a C++ compiler)`,
    );
  }
  try {
    const require = createRequire(import.meta.url);
    cached = require(addonPath) as NativeAddon;
    return cached;
  } catch (err) {
    throw new NativeLoadError(
      `native addon at ${addonPath} failed to load (${(err as Error).message}); rebuild it with \`npm run build:native\``,
    );
  }
}

/** Like loadNative but returns the error instead of throwing (for doctor and health). */
export function tryLoadNative(): { addon?: NativeAddon; error?: string } {
  try {
    return { addon: loadNative() };
  } catch (err) {
    return { error: (err as Error).message };
  }
}

/** Why each compiled GPU kernel set (cuda, metal) is not what backend "auto" picks, or undefined
 *  when there is none or auto picks it: for the daemon's log (doctor shows the same detail). */
export function acceleratorNote(info: NativeInfo): string | undefined {
  const skipped = info.kernelSets.filter((k) => (k.name === 'cuda' || k.name === 'metal') && !k.auto);
  return skipped.length
    ? skipped.map((k) => `${k.name} not chosen by backend auto: ${k.detail}`).join('; ')
    : undefined;
}
