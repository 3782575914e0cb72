// The model registry service: configured models by name, each loaded on first use (or by
// models.load), served one request at a time through a bounded queue that is fair between clients,
// and unloaded after an idle keep-alive (the last request's keep_alive, else the model's;
// Ollama-like). Progress is emitted as events; /health reports a loading model as not ready for
// that model only.
import { EventEmitter } from 'node:events';
import type { Logger } from '../log.js';
import { Service } from '../service.js';
import { formatDuration } from '../util/duration.js';
import { linkedSignal } from '../util/linked-signal.js';
import { AdapterNotFoundError, type AdapterInfo } from './adapters/adapter-manager.js';
import { AdapterError } from './adapters/plan.js';
import type { AdapterSource, ModelProfile } from './config.js';
import type { NativeError, PrefaultStatus } from '../native/binding.js';
import { BusyError, CancelledError, RequestQueue } from './request-queue.js';
import { LOAD_STAGES, ModelLoadError, type LoadStage, type ModelLoader, type ServedModel } from './served-model.js';
import type { ServingMetrics } from './serving-metrics.js';
import { SessionPool } from './session-pool.js';
import { describeModelFolder } from '../vision/model-folder.js';
import { DEFAULT_VISION } from '../vision/config.js';
import type { ImageLimits } from '../vision/image-input.js';
import { type VisionStatus, visionStatus } from '../vision/vision-status.js';

export type ModelState = 'unloaded' | 'loading' | 'loaded' | 'failed';

export interface LoadProgress {
  model: string;
  state: ModelState;
  stage?: LoadStage;
  /** 0..1 by stage (see LOAD_STAGES). */
  progress: number;
  error?: string;
}

/** No model of that name is configured (HTTP 404 model_not_found). */
export class ModelNotFoundError extends Error {
  constructor(
    readonly model: string,
    known: string[],
  ) {
    super(`model "${model}" is not configured (configured: ${known.join(', ') || 'none'}); see models.<name>.path`);
    this.name = 'ModelNotFoundError';
  }
}

export interface Lease {
  name: string;
  model: ServedModel;
  sessions: SessionPool;
  /** Aborts when the caller's signal does or the daemon stops: generation must watch this one. */
  signal: AbortSignal;
  /** Time spent waiting in the queue and loading, in ms. */
  queuedMs: number;
  loadMs: number;
  /** Ends this request's turn; `keepAliveMs` (the request's keep_alive) applies to the idle time after it, else the model's. */
  release(keepAliveMs?: number): void;
}

export interface Timers {
  now(): number;
  /** Returns a function that cancels the timer. */
  after(ms: number, fn: () => void): () => void;
}

/** The longest delay setTimeout takes (2^31 − 1 ms, ~24.8 days); longer ones fire after 1 ms. */
const MAX_TIMEOUT_MS = 2 ** 31 - 1;

export const realTimers: Timers = {
  now: () => performance.now(),
  // A longer wait (keep_alive 720h) is a chain of the longest timeouts.
  after: (ms, fn) => {
    let t: NodeJS.Timeout;
    const arm = (left: number) => {
      t = setTimeout(() => (left > MAX_TIMEOUT_MS ? arm(left - MAX_TIMEOUT_MS) : fn()), Math.min(left, MAX_TIMEOUT_MS));
      t.unref();
    };
    arm(ms);
    return () => clearTimeout(t);
  },
};

class Slot {
  state: ModelState = 'unloaded';
  served?: ServedModel;
  pool?: SessionPool;
  loading?: Promise<ServedModel>;
  stage?: LoadStage;
  error?: string;
  keepAliveMs: number;
  cancelUnload?: () => void;
  /** unload() calls waiting for their turn in the queue. */
  unloadsPending = 0;
  /** loadAdapter() calls under way: an unload waits for them. */
  readonly adapterLoads = new Set<Promise<unknown>>();
  unloadAt?: number;
  loadedAt?: number;
  loadMs?: number;
  readonly queue: RequestQueue;
  /** LoRA adapters every load of this model gets: the configured ones plus adapters.load's. */
  readonly adapters: Map<string, AdapterSource>;

  constructor(
    readonly name: string,
    readonly profile: ModelProfile,
  ) {
    this.keepAliveMs = profile.keepAliveMs;
    this.queue = new RequestQueue(name, profile.queueSize, profile.queuePerClient ?? profile.queueSize);
    this.adapters = new Map(Object.entries(profile.adapters ?? {}));
  }
}

export interface RegistryDeps {
  models: Record<string, ModelProfile>;
  loader: ModelLoader;
  metrics: ServingMetrics;
  log: Logger;
  timers?: Timers;
  /** Runs before the first load (the demo model is generated here). */
  prepare?: (name: string) => Promise<void> | void;
  /** Why a compiled GPU kernel set is not what backend auto picks (logged with each load), or undefined. */
  acceleratorNote?: () => string | undefined;
}

export class ModelRegistry extends Service {
  readonly name = 'models';
  readonly events = new EventEmitter<{ progress: [LoadProgress] }>();
  private readonly slots = new Map<string, Slot>();
  private readonly timers: Timers;
  private stopping = new AbortController();

  constructor(private readonly deps: RegistryDeps) {
    super();
    this.timers = deps.timers ?? realTimers;
    for (const [name, profile] of Object.entries(deps.models)) this.slots.set(name, new Slot(name, profile));
  }

  names(): string[] {
    return [...this.slots.keys()];
  }

  /** Aborted when the registry stops: a request waiting on its client (a stream's backpressure)
   *  listens to it too, so a reader that stalls cannot hold the daemon's stop. */
  get stoppingSignal(): AbortSignal {
    return this.stopping.signal;
  }

  /** Waits for this model's turn, loads it if needed, and hands it over until release(). `client`
   *  names the caller for the queue's per-client limit and round-robin (see RequestQueue.acquire). */
  async lease(
    name: string,
    o: { signal?: AbortSignal; onProgress?: (p: LoadProgress) => void; client?: string } = {},
  ): Promise<Lease> {
    const slot = this.slot(name);
    if (this.status !== 'ready') throw new CancelledError('the daemon is not serving models (starting or stopping)');
    const link = o.signal ? linkedSignal(o.signal, this.stopping.signal) : undefined;
    const signal = link?.signal ?? this.stopping.signal;
    const t0 = this.timers.now();
    this.holdLoaded(slot);
    const turn = slot.queue.acquire(signal, { client: o.client });
    this.updateQueueMetrics(slot);
    let release: () => void;
    try {
      release = await turn;
    } catch (err) {
      link?.unlink();
      this.afterUse(slot);
      if (err instanceof BusyError) this.deps.metrics.requests.inc({ model: name, outcome: 'busy' });
      throw err;
    }
    this.updateQueueMetrics(slot);
    const t1 = this.timers.now();
    let served: ServedModel;
    try {
      served = await abortable(this.ensureLoaded(slot, o.onProgress), signal);
    } catch (err) {
      link?.unlink();
      release();
      this.afterUse(slot);
      throw err;
    }
    const t2 = this.timers.now();
    let done = false;
    return {
      name,
      model: served,
      sessions: slot.pool!,
      signal,
      queuedMs: t1 - t0,
      loadMs: t2 - t1,
      release: (keepAliveMs) => {
        if (done) return;
        done = true;
        link?.unlink();
        slot.keepAliveMs = keepAliveMs ?? slot.profile.keepAliveMs;
        release();
        this.afterUse(slot);
      },
    };
  }

  /** Loads a model now (no queue slot needed); `keepAliveMs` sets its keep-alive. */
  async load(
    name: string,
    o: { keepAliveMs?: number; onProgress?: (p: LoadProgress) => void; signal?: AbortSignal } = {},
  ): Promise<ModelStatus> {
    const slot = this.slot(name);
    slot.keepAliveMs = o.keepAliveMs ?? slot.profile.keepAliveMs;
    this.holdLoaded(slot);
    // Behind a pending unload, a load takes its turn after it and loads the model again.
    const release = slot.unloadsPending > 0 ? await slot.queue.acquire(o.signal, { force: true }) : undefined;
    try {
      await abortable(this.ensureLoaded(slot, o.onProgress), o.signal);
    } finally {
      release?.();
      this.afterUse(slot);
    }
    return this.modelStatus(slot);
  }

  /** Unloads after the requests already queued for it; a request arriving later loads it again. */
  async unload(name: string): Promise<ModelStatus> {
    const slot = this.slot(name);
    this.holdLoaded(slot);
    slot.unloadsPending++;
    const release = await slot.queue.acquire(undefined, { force: true }).finally(() => slot.unloadsPending--);
    try {
      if (slot.loading) await slot.loading.catch(() => undefined);
      // An adapter load under way finishes first (its adapter is then remembered for the next load).
      await Promise.allSettled(slot.adapterLoads);
      this.dispose(slot, 'unloaded on request');
    } finally {
      release();
    }
    return this.modelStatus(slot);
  }

  /** Loads a LoRA adapter for a model (loading the model first when needed); later reloads of the
   *  model load it again. The model stays loaded and keeps serving meanwhile. */
  async loadAdapter(
    model: string,
    name: string,
    source: AdapterSource,
    o: { signal?: AbortSignal; onProgress?: (p: LoadProgress) => void } = {},
  ): Promise<AdapterInfo> {
    const slot = this.slot(model);
    if (slot.adapters.has(name))
      throw new AdapterError(`adapter "${name}" is already loaded for model "${model}"; unload it first`, 'name');
    this.holdLoaded(slot);
    const work = (async () => {
      const served = await abortable(this.ensureLoaded(slot, o.onProgress), o.signal);
      if (!served.adapters) throw new AdapterError(`model "${model}" takes no LoRA adapters`, 'model');
      const info = await served.adapters.load(name, source.path, source.format);
      slot.adapters.set(name, source);
      this.deps.log.info({ model, adapter: name, path: source.path, bytes: info.bytes }, 'adapter loaded');
      return info;
    })();
    slot.adapterLoads.add(work);
    try {
      return await work;
    } finally {
      slot.adapterLoads.delete(work);
      this.afterUse(slot);
    }
  }

  /** Drops an adapter (sessions running with it keep it until they switch) and forgets it. */
  unloadAdapter(model: string, name: string): AdapterStatus {
    const slot = this.slot(model);
    const status = adapterStatuses(slot).find((a) => a.name === name);
    if (!status) throw new AdapterNotFoundError(name, [...slot.adapters.keys()].sort());
    slot.adapters.delete(name);
    if (slot.served?.adapters?.has(name)) slot.served.adapters.unload(name);
    this.deps.log.info({ model, adapter: name }, 'adapter unloaded');
    return { ...status, loaded: false };
  }

  /** The model's adapters: resident ones while it is loaded, else those its next load gets. */
  adapterStatus(model: string): AdapterStatus[] {
    return adapterStatuses(this.slot(model));
  }

  /** The image limits of model `name` (engine.vision's), without loading it; undefined for an unknown name. */
  imageLimitsOf(name: string): ImageLimits | undefined {
    const slot = this.slots.get(name);
    return slot && (slot.profile.vision ?? DEFAULT_VISION).limits;
  }

  statusOf(name: string): ModelStatus {
    return this.modelStatus(this.slot(name));
  }

  statuses(): ModelStatus[] {
    return [...this.slots.values()].map((s) => this.modelStatus(s));
  }

  protected override describe() {
    const models = Object.fromEntries([...this.slots.values()].map((s) => [s.name, modelHealth(s)]));
    return { detail: { models } };
  }

  /** For GET /health?model=NAME: undefined when no such model is configured. */
  modelHealth(name: string): ModelHealth | undefined {
    const slot = this.slots.get(name);
    return slot && modelHealth(slot);
  }

  protected async onStart(): Promise<void> {
    this.stopping = new AbortController();
  }

  protected async onStop(): Promise<void> {
    const stopped = new CancelledError('the daemon is stopping');
    for (const slot of this.slots.values()) slot.queue.rejectAll(stopped);
    this.stopping.abort();
    // Running requests see the abort between tokens and release their turn.
    await Promise.all(
      [...this.slots.values()].map((slot) => new Promise<void>((resolve) => slot.queue.whenIdle(resolve))),
    );
    for (const slot of this.slots.values()) {
      if (slot.loading) await slot.loading.catch(() => undefined);
      // As unload: an adapter load under way ends before the model goes (none lands on a disposed one).
      await Promise.allSettled(slot.adapterLoads);
      this.dispose(slot, 'daemon stopping');
    }
  }

  private slot(name: string): Slot {
    const slot = this.slots.get(name);
    if (!slot) throw new ModelNotFoundError(name, this.names());
    return slot;
  }

  private ensureLoaded(slot: Slot, onProgress?: (p: LoadProgress) => void): Promise<ServedModel> {
    if (slot.served) return Promise.resolve(slot.served);
    const listener = onProgress && ((p: LoadProgress) => p.model === slot.name && onProgress(p));
    if (listener) this.events.on('progress', listener);
    slot.loading ??= this.startLoad(slot);
    const loading = slot.loading;
    return listener ? loading.finally(() => this.events.off('progress', listener)) : loading;
  }

  private async startLoad(slot: Slot): Promise<ServedModel> {
    const t0 = this.timers.now();
    slot.state = 'loading';
    slot.error = undefined;
    const stage = (s: LoadStage) => {
      slot.stage = s;
      this.emit(slot);
    };
    this.deps.log.info({ model: slot.name, path: slot.profile.path }, 'loading model');
    try {
      stage('prepare');
      await this.deps.prepare?.(slot.name);
      const served = await this.deps.loader(slot.profile, stage);
      // Prefill calls no shorter than the model's chunk: whole-layer prefill reads every expert per call.
      const chunk = Math.max(256, served.summary?.prefillChunk ?? 0);
      const pool = new SessionPool(() => served.createSession(), slot.profile.sessions, chunk);
      try {
        await loadAdapters(slot, served);
        await pool.open();
      } catch (err) {
        pool.clear();
        served.dispose();
        throw err;
      }
      Object.assign(slot, {
        served,
        pool,
        state: 'loaded',
        stage: undefined,
        loadedAt: Date.now(),
        loadMs: this.timers.now() - t0,
      });
      this.deps.metrics.loaded.set({ model: slot.name }, 1);
      this.deps.metrics.loadSeconds.observe({ model: slot.name }, slot.loadMs! / 1000);
      this.deps.log.info(
        {
          model: slot.name,
          ms: Math.round(slot.loadMs!),
          arch: served.summary?.arch,
          backend: served.summary?.backend,
          context: served.contextLength,
          ...(served.summary && !/^(cuda|metal)$/.test(served.summary.backend)
            ? { accelerator: this.deps.acceleratorNote?.() }
            : {}),
        },
        'model loaded',
      );
      this.emit(slot);
      // Whoever asked may have given up meanwhile (their afterUse skipped the loading model): start the keep-alive.
      slot.loading = undefined;
      this.afterUse(slot);
      return served;
    } catch (err) {
      const e = err as NativeError;
      // A refused load option is named by the model setting that gave it (top_k, not topK).
      const key = e.option === 'topK' ? 'top_k' : undefined;
      const why = key && e.detail ? `${key}: ${e.detail}` : e.message;
      const message = `model "${slot.name}" (${slot.profile.path}) failed to load: ${why}`;
      Object.assign(slot, { state: 'failed', stage: undefined, error: message });
      this.deps.log.error({ model: slot.name, err: (err as Error).message }, 'model failed to load');
      this.emit(slot);
      throw new ModelLoadError(message);
    } finally {
      slot.loading = undefined;
    }
  }

  private emit(slot: Slot): void {
    this.events.emit('progress', progressOf(slot));
  }

  /** A request or load arrived: the model must not unload under it. */
  private holdLoaded(slot: Slot): void {
    slot.cancelUnload?.();
    slot.cancelUnload = undefined;
    slot.unloadAt = undefined;
  }

  /** After a turn: once the queue is idle and no adapter loads, start the keep-alive (0 = unload
   *  now, negative = never). An adapter load in flight calls this again when it ends. */
  private afterUse(slot: Slot): void {
    this.updateQueueMetrics(slot);
    if (!slot.queue.idle || !slot.served || slot.loading || slot.adapterLoads.size > 0) return;
    this.holdLoaded(slot);
    const ms = slot.keepAliveMs;
    if (ms === 0) this.dispose(slot, 'keep_alive 0');
    else if (ms > 0) {
      slot.unloadAt = Date.now() + ms;
      slot.cancelUnload = this.timers.after(ms, () => {
        slot.cancelUnload = undefined;
        slot.unloadAt = undefined;
        if (slot.queue.idle && !slot.loading && slot.adapterLoads.size === 0)
          this.dispose(slot, `idle for keep_alive ${formatDuration(ms)}`);
      });
    }
  }

  private dispose(slot: Slot, why: string): void {
    this.holdLoaded(slot);
    if (!slot.served) return;
    slot.pool?.clear();
    slot.served.dispose();
    Object.assign(slot, { served: undefined, pool: undefined, state: 'unloaded', loadedAt: undefined });
    this.deps.metrics.loaded.set({ model: slot.name }, 0);
    this.deps.metrics.stream.unloaded(slot.name);
    this.deps.log.info({ model: slot.name, why }, 'model unloaded');
    this.emit(slot);
  }

  private updateQueueMetrics(slot: Slot): void {
    this.deps.metrics.queueDepth.set({ model: slot.name }, slot.queue.waiting);
    this.deps.metrics.active.set({ model: slot.name }, slot.queue.active);
  }

  private modelStatus(slot: Slot): ModelStatus {
    const s = slot.served;
    const pool = slot.pool?.stats();
    const adapters = adapterStatuses(slot);
    return {
      name: slot.name,
      path: slot.profile.path,
      state: slot.state,
      ...(slot.state === 'loading' ? { progress: progressOf(slot).progress, stage: slot.stage } : {}),
      ...(slot.error ? { error: slot.error } : {}),
      profile: {
        threads: slot.profile.threads,
        context_length: s?.contextLength ?? slot.profile.contextLength,
        top_k: s?.summary?.topK ?? slot.profile.topK ?? null,
        backend: s?.summary?.backend ?? slot.profile.backend ?? null,
      },
      keep_alive: formatDuration(slot.keepAliveMs),
      unload_at: slot.unloadAt === undefined ? null : new Date(slot.unloadAt).toISOString(),
      loaded_at: slot.loadedAt === undefined ? null : new Date(slot.loadedAt).toISOString(),
      load_ms: slot.loadMs === undefined ? null : Math.round(slot.loadMs),
      queue: {
        active: slot.queue.active,
        waiting: slot.queue.waiting,
        capacity: slot.queue.capacity,
        per_client: slot.queue.perClient,
      },
      sessions: pool
        ? { count: pool.sessions, in_use: pool.inUse, cached_tokens: pool.tokens }
        : { count: 0, in_use: 0, cached_tokens: [] },
      adapters,
      inputs: describeModelFolder(slot.profile.path).inputs,
      ...(s?.vision ? { vision: visionStatus(s.vision) } : {}),
      memory: {
        kv_cache_bytes: pool?.stateBytes ?? 0,
        adapter_bytes: adapters.reduce((n, a) => n + a.bytes, 0),
        vision_bytes: s?.vision?.bytes() ?? 0,
        weight_file_bytes: s?.summary?.fileBytes ?? null,
        weight_matrix_bytes: s?.summary?.matrixBytes ?? null,
        weights_mapped: prefaultOf(s),
      },
      ...(s?.summary
        ? {
            engine: {
              arch: s.summary.arch,
              layers: s.summary.layers,
              experts: s.summary.experts,
              vocab_size: s.summary.vocabSize,
              config_top_k: s.summary.configTopK,
            },
          }
        : {}),
    };
  }
}

export interface ModelStatus {
  name: string;
  path: string;
  state: ModelState;
  progress?: number;
  stage?: LoadStage;
  error?: string;
  profile: { threads: number; context_length: number; top_k: number | null; backend: string | null };
  keep_alive: string;
  unload_at: string | null;
  loaded_at: string | null;
  load_ms: number | null;
  /** capacity: queue_size; per_client: queue_per_client (each client's share while the queue is full). */
  queue: { active: number; waiting: number; capacity: number; per_client: number };
  sessions: { count: number; in_use: number; cached_tokens: number[] };
  adapters: AdapterStatus[];
  memory: {
    kv_cache_bytes: number;
    adapter_bytes: number;
    /** The vision tower's file and the cached image features. */
    vision_bytes: number;
    weight_file_bytes: number | null;
    weight_matrix_bytes: number | null;
    /** The weights' background mapping into the daemon (models.<name>.prefault; null when off). */
    weights_mapped: {
      state: PrefaultStatus['state'];
      done_bytes: number;
      total_bytes: number;
      experts_checked: number;
    } | null;
  };
  engine?: { arch: string; layers: number; experts: number; vocab_size: number; config_top_k: number };
  /** What the folder takes: ['text'] or ['text', 'image']. */
  inputs: string[];
  /** The loaded vision tower (absent: text only or not loaded). */
  vision?: VisionStatus;
}

/** A LoRA adapter of a model: resident (`loaded`) or waiting for the model's next load. */
export interface AdapterStatus {
  name: string;
  source: string;
  format: string | null;
  loaded: boolean;
  /** The rest are known once loaded (else null / empty / 0). */
  id: string | null;
  modules: number | null;
  ranks: number[];
  bytes: number;
}

function adapterStatuses(slot: Slot): AdapterStatus[] {
  const manager = slot.served?.adapters;
  return [...slot.adapters].map(([name, src]): AdapterStatus => {
    const info = manager?.has(name) ? manager.list().find((a) => a.name === name) : undefined;
    if (info)
      return {
        name,
        source: info.source,
        format: info.format,
        loaded: true,
        id: info.id,
        modules: info.modules,
        ranks: info.ranks,
        bytes: info.bytes,
      };
    return {
      name,
      source: src.path,
      format: src.format ?? null,
      loaded: false,
      id: null,
      modules: null,
      ranks: [],
      bytes: 0,
    };
  });
}

/** Loads every adapter the slot remembers into a fresh load; a bad one fails the load, naming it.
 *  An adapters.unload that comes while one loads wins: it is dropped again (or its failure ignored). */
async function loadAdapters(slot: Slot, served: ServedModel): Promise<void> {
  for (const [name, src] of slot.adapters) {
    if (!served.adapters) throw new Error(`adapter "${name}" is configured but this model takes no LoRA adapters`);
    try {
      await served.adapters.load(name, src.path, src.format);
    } catch (err) {
      if (slot.adapters.get(name) !== src) continue;
      throw new Error(`adapter "${name}" (${src.path}): ${(err as Error).message}`);
    }
    if (slot.adapters.get(name) !== src) served.adapters.unload(name);
  }
}

export interface ModelHealth {
  state: ModelState;
  ready: boolean;
  progress?: number;
  error?: string;
}

function progressOf(slot: Slot): LoadProgress {
  const at = LOAD_STAGES.findIndex((s) => s.stage === slot.stage);
  const progress = slot.state === 'loaded' ? 1 : slot.state === 'loading' && at > 0 ? LOAD_STAGES[at - 1]!.upTo : 0;
  return {
    model: slot.name,
    state: slot.state,
    ...(slot.stage ? { stage: slot.stage } : {}),
    progress,
    ...(slot.error ? { error: slot.error } : {}),
  };
}

function modelHealth(slot: Slot): ModelHealth {
  const p = progressOf(slot);
  return {
    state: slot.state,
    ready: slot.state === 'loaded',
    ...(slot.state === 'loading' ? { progress: p.progress } : {}),
    ...(slot.error ? { error: slot.error } : {}),
  };
}

/** Waits for `p` unless `signal` aborts first (then rejects CancelledError; `p` carries on). */
function abortable<T>(p: Promise<T>, signal?: AbortSignal): Promise<T> {
  if (!signal) return p;
  if (signal.aborted) return Promise.reject(new CancelledError());
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(new CancelledError());
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

function prefaultOf(s: ServedModel | undefined): ModelStatus['memory']['weights_mapped'] {
  const p = s?.prefault?.();
  return p
    ? { state: p.state, done_bytes: p.doneBytes, total_bytes: p.totalBytes, experts_checked: p.expertsChecked }
    : null;
}
