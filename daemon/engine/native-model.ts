// The native engine behind small classes: a loaded model and its sessions (KV caches).
// Every native rejection becomes an EngineError carrying the engine's message.
import {
  loadNative,
  type CalibrateOptions,
  type CalibrationProgress,
  type CalibrationResult,
  type HeadEval,
  type AdapterHandle,
  type AdapterSpec,
  type AdapterSummary,
  type LoadModelOptions,
  type ModelHandle,
  type ModelSummary,
  type NativeAddon,
  type NativeError,
  type SessionHandle,
  type SessionInfo,
  type StreamStats,
  type MultimodalPrefill,
  type PrefaultStatus,
} from '../native/binding.js';
import type { AdapterRef, LogitsSource } from './prefix-cache.js';

export class EngineError extends Error {
  constructor(
    message: string,
    /** A refused load option as loadModel names it (`topK`), with the rule alone in `detail`. */
    readonly option?: string,
    readonly detail?: string,
  ) {
    super(message);
    this.name = 'EngineError';
  }
}

async function call<T>(p: Promise<T>): Promise<T> {
  try {
    return await p;
  } catch (err) {
    const e = err as NativeError;
    throw new EngineError(e.message, e.option, e.detail);
  }
}

/** Index of the largest logit (the lowest index among equal maxima; NaN never wins; 0 when none is above -Infinity). */
export function argmax(logits: Float32Array): number {
  return Math.max(0, loadNative().argmax(logits));
}

let adapterSeq = 0;

/** A LoRA adapter loaded for one model; sessions of that model can run with it. */
export class NativeAdapter implements AdapterRef {
  /** Unique per load (name@n): a reloaded adapter of the same name is a different adapter. */
  readonly id: string;
  private disposed = false;

  constructor(
    private readonly addon: NativeAddon,
    readonly handle: AdapterHandle,
    readonly summary: AdapterSummary,
    readonly model: NativeModel,
  ) {
    this.id = `${summary.name}@${++adapterSeq}`;
  }

  get name(): string {
    return this.summary.name;
  }

  get isDisposed(): boolean {
    return this.disposed;
  }

  /** Frees the adapter once no session runs with it any more. */
  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    this.addon.disposeAdapter(this.handle);
  }
}

export class NativeModel {
  private disposed = false;

  private constructor(
    private readonly addon: NativeAddon,
    private readonly handle: ModelHandle,
    readonly summary: ModelSummary,
    readonly dir: string,
  ) {}

  /** Loads a model folder (config.json + safetensors, mmapped read-only). */
  static async load(dir: string, opts: LoadModelOptions = {}): Promise<NativeModel> {
    const addon = loadNative();
    const { handle, summary } = await call(addon.loadModel(dir, opts));
    return new NativeModel(addon, handle, summary, dir);
  }

  async createSession(opts: { contextLength?: number } = {}): Promise<NativeSession> {
    if (this.disposed) throw new EngineError('createSession: the model was disposed; load it again');
    const handle = await call(this.addon.createSession(this.handle, opts));
    return new NativeSession(this.addon, handle, this.summary.vocabSize, this);
  }

  /** Loads a LoRA adapter plan (see daemon/engine/adapters/read-adapter.ts) for this model. */
  async loadAdapter(spec: AdapterSpec): Promise<NativeAdapter> {
    if (this.disposed) throw new EngineError('loadAdapter: the model was disposed; load it again');
    const { handle, summary } = await call(this.addon.loadAdapter(this.handle, spec));
    return new NativeAdapter(this.addon, handle, summary, this);
  }

  /** Trains prerouter heads on the routing this model executes over `tokens`. */
  calibratePrerouter(
    tokens: ArrayLike<number>,
    opts: CalibrateOptions = {},
    onProgress?: (p: CalibrationProgress) => void,
  ): Promise<CalibrationResult> {
    return call(this.addon.prerouterCalibrate(this.handle, Int32Array.from(tokens), opts, onProgress));
  }

  /** Recall of the heads file `heads` (and of the zero-training heads) over `tokens`. */
  evalPrerouter(
    tokens: ArrayLike<number>,
    heads: string,
    onProgress?: (p: CalibrationProgress) => void,
  ): Promise<HeadEval[]> {
    return call(this.addon.prerouterEval(this.handle, Int32Array.from(tokens), heads, onProgress));
  }

  /** The background mapping of the weights (null without `prefault`, or once disposed). */
  prefaultStatus(): PrefaultStatus | null {
    return this.disposed ? null : this.addon.modelPrefault(this.handle);
  }

  /** Resolves once the background mapping has finished (polled every `pollMs`). */
  async prefaultDone(pollMs = 5): Promise<PrefaultStatus | null> {
    for (;;) {
      const st = this.prefaultStatus();
      if (st === null || st.state !== 'running') return st;
      await new Promise((r) => setTimeout(r, pollMs));
    }
  }

  /** Releases the model; sessions already created keep it alive until they are disposed. */
  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    this.addon.disposeModel(this.handle);
  }
}

export interface GreedyResult {
  /** Generated token ids (the argmax of each step's logits). */
  tokens: number[];
  /** Logits that chose each generated token. */
  logits: Float32Array[];
}

export class NativeSession implements LogitsSource {
  private current: NativeAdapter | null = null;
  /** The model's routing width, which `setTopK(null)` returns to. */
  private readonly modelTopK: number;

  constructor(
    private readonly addon: NativeAddon,
    private readonly handle: SessionHandle,
    readonly vocabSize: number,
    readonly model?: NativeModel,
  ) {
    this.modelTopK = addon.sessionInfo(handle).topK;
  }

  /** The adapter the session runs with (null: the base model). */
  get adapter(): NativeAdapter | null {
    return this.current;
  }

  /**
   * Runs later calls with `adapter` (null: the base model). The KV cache is kept, so a switch
   * mid-conversation changes outputs from the next token on; PrefixSession keys reuse by adapter.
   */
  setAdapter(adapter: AdapterRef | null): void {
    if (adapter !== null && !(adapter instanceof NativeAdapter))
      throw new EngineError('setAdapter: not an adapter of the native engine');
    if (adapter && this.model && adapter.model !== this.model) {
      throw new EngineError(`setAdapter: adapter "${adapter.name}" was loaded for another model`);
    }
    try {
      this.addon.setAdapter(this.handle, adapter ? adapter.handle : null);
    } catch (err) {
      throw new EngineError((err as Error).message);
    }
    this.current = adapter;
  }

  /**
   * Routes later calls with the top `k` experts per token (null: the model's K), without a reload.
   * Like an adapter the KV cache is kept; PrefixSession keys reuse by K.
   */
  setTopK(k: number | null): void {
    try {
      this.addon.setTopK(this.handle, k ?? this.modelTopK);
    } catch (err) {
      throw new EngineError((err as Error).message);
    }
  }

  /** The routing width later calls run at. */
  get topK(): number {
    return this.info().topK;
  }

  /** Appends tokens; resolves to the last token's logits. */
  prefill(tokens: ArrayLike<number>, multimodal?: MultimodalPrefill): Promise<Float32Array> {
    const ids = tokens instanceof Int32Array ? tokens : Int32Array.from(tokens);
    return call(this.addon.prefill(this.handle, ids, multimodal));
  }

  decode(token: number): Promise<Float32Array> {
    return call(this.addon.decode(this.handle, token));
  }

  /** Appends one token; resolves to the next greedy token among ids below `vocabSize` (-1: no finite logit), the logits left native. */
  decodeGreedy(token: number, vocabSize?: number): Promise<number> {
    return call(this.addon.decodeGreedy(this.handle, token, vocabSize));
  }

  /** Keeps the first nTokens of the cache so a shared prompt prefix is not recomputed. */
  truncate(nTokens: number): Promise<void> {
    return call(this.addon.truncate(this.handle, nTokens));
  }

  info(): SessionInfo {
    return this.addon.sessionInfo(this.handle);
  }

  streamStats(): StreamStats {
    return this.info().stream;
  }

  /** Bytes of the KV cache (as of the last completed call). */
  stateBytes(): number {
    return this.info().stateBytes;
  }

  /** Tokens in the KV cache (as of the last completed call). */
  get length(): number {
    return this.info().nPast;
  }

  /** Prefills `prompt`, then decodes `steps` tokens greedily. */
  async greedy(prompt: ArrayLike<number>, steps: number): Promise<GreedyResult> {
    const out: GreedyResult = { tokens: [], logits: [] };
    let logits = await this.prefill(prompt);
    for (let i = 0; i < steps; i++) {
      const next = argmax(logits);
      out.tokens.push(next);
      out.logits.push(logits);
      if (i + 1 < steps) logits = await this.decode(next);
    }
    return out;
  }

  dispose(): void {
    this.addon.disposeSession(this.handle);
  }
}
