// The whole native surface, typed in one place, and the loader for the addon.
// Slow native calls return Promises (async workers); no C++ exception crosses into JS.
import { createRequire } from 'node:module';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

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

export interface LoadModelOptions {
  /** CPU threads for the kernels (1..256, default 1). */
  threads?: number;
  /** Default context length of new sessions (default: max_position_embeddings). */
  contextLength?: number;
  /** Routing width K: experts per token (default: the config's num_experts_per_tok). */
  topK?: number;
  /** Kernel set by name, see NativeInfo.kernelSets, or "auto" (the default): the fastest usable
   *  CPU set (cpu-avx512 > cpu-avx2 on x86-64, cpu-neon-dotprod > cpu-neon on arm64, else
   *  cpu-ref); accelerator sets (cuda) are used only when named. */
  backend?: string;
  /** KV cache element type: "f32" (default) or "f16" (half the memory). */
  kvCache?: 'f32' | 'f16';
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
  /** Name of the LoRA adapter the session runs with, null for the base model. */
  adapter: string | null;
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

export interface NativeAddon {
  info(): NativeInfo;
  /** Maps the folder's safetensors read-only and checks every tensor against config.json. */
  loadModel(dir: string, opts?: LoadModelOptions): Promise<LoadedModel>;
  /** Sessions created earlier keep the mappings alive until they are disposed. */
  disposeModel(model: ModelHandle): void;
  createSession(model: ModelHandle, opts?: { contextLength?: number }): Promise<SessionHandle>;
  /** Appends tokens to the session; resolves to the last token's logits [vocabSize]. */
  prefill(session: SessionHandle, tokens: Int32Array): Promise<Float32Array>;
  /** Appends one token; resolves to its logits [vocabSize]. */
  decode(session: SessionHandle, token: number): Promise<Float32Array>;
  /** Keeps the first nTokens of the KV cache. */
  truncate(session: SessionHandle, nTokens: number): Promise<void>;
  /** A snapshot taken after the last completed call. */
  sessionInfo(session: SessionHandle): SessionInfo;
  disposeSession(session: SessionHandle): void;
  /** Checks the spec against the model (modules, shapes, dtypes) and copies A and B into memory. */
  loadAdapter(model: ModelHandle, spec: AdapterSpec): Promise<LoadedAdapter>;
  /** Drops the handle; sessions that run with the adapter keep it until they switch. */
  disposeAdapter(adapter: AdapterHandle): void;
  /** The adapter the session's next calls run with (null: the base model). Throws while busy. */
  setAdapter(session: SessionHandle, adapter: AdapterHandle | null): void;
  /** Memory read bandwidth with a native multi-threaded read loop. */
  membw(opts?: MembwOptions): Promise<MembwResult>;
}

export class NativeLoadError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'NativeLoadError';
  }
}

/** Repository root: dist/daemon/native → ../../.. */
export const repoRoot = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
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
