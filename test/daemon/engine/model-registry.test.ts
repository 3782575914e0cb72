// The model lifecycle with a controllable loader and injected timers: load on first use with
// progress, per-model health, keep-alive (config, per request, 0, negative), the busy queue,
// aborts, failed loads, explicit load/unload and stop.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import {
  type AdapterInfo,
  type AdapterManager,
  AdapterNotFoundError,
} from '../../../daemon/engine/adapters/adapter-manager.js';
import { AdapterError } from '../../../daemon/engine/adapters/plan.js';
import type { ModelProfile } from '../../../daemon/engine/config.js';
import { ConstraintFactory } from '../../../daemon/engine/constrained/constraints.js';
import {
  type LoadProgress,
  ModelNotFoundError,
  ModelRegistry,
  realTimers,
  type Timers,
} from '../../../daemon/engine/model-registry.js';
import { BusyError, CancelledError } from '../../../daemon/engine/request-queue.js';
import { ModelLoadError, type ModelLoader, type ServedModel } from '../../../daemon/engine/served-model.js';
import { ServingMetrics } from '../../../daemon/engine/serving-metrics.js';
import type { EngineSession } from '../../../daemon/engine/session-pool.js';
import { loadTextModel } from '../../../daemon/engine/text-config.js';
import { FIXTURE, HashLogitsSource } from './fake-sources.js';

const text = await loadTextModel(FIXTURE);

class FakeTimers implements Timers {
  t = 0;
  private pending: { at: number; fn: () => void; live: boolean }[] = [];
  now = () => this.t;
  after = (ms: number, fn: () => void) => {
    const entry = { at: this.t + ms, fn, live: true };
    this.pending.push(entry);
    return () => {
      entry.live = false;
    };
  };
  get live(): number {
    return this.pending.filter((p) => p.live).length;
  }
  advance(ms: number): void {
    this.t += ms;
    for (const p of this.pending.filter((e) => e.live && e.at <= this.t)) {
      p.live = false;
      p.fn();
    }
  }
}

class FakeSession extends HashLogitsSource implements EngineSession {
  stateBytes = () => this.length * 4;
  dispose(): void {}
}

/** An adapter manager whose loads wait for `open()` while `gated` (the registry's view of AdapterManager). */
class FakeAdapters {
  gated = false;
  readonly gates: (() => void)[] = [];
  /** The model was disposed: a load then fails as the engine's would. */
  dead = false;
  private readonly entries = new Map<string, AdapterInfo>();
  async load(name: string, path: string): Promise<AdapterInfo> {
    if (this.entries.has(name)) throw new AdapterError(`adapter "${name}" is already loaded; unload it first`, 'name');
    if (this.gated) await new Promise<void>((open) => this.gates.push(open));
    if (this.dead) throw new AdapterError('loadAdapter: the model was disposed');
    const info: AdapterInfo = {
      name,
      id: `${name}-1`,
      format: 'peft',
      source: path,
      modules: 1,
      ranks: [8],
      bytes: 64,
    };
    this.entries.set(name, info);
    return info;
  }
  unload(name: string): AdapterInfo {
    const info = this.entries.get(name);
    if (!info) throw new AdapterNotFoundError(name, [...this.entries.keys()]);
    this.entries.delete(name);
    return info;
  }
  has = (name: string) => this.entries.has(name);
  list = () => [...this.entries.values()];
  open(): void {
    this.gates.shift()!();
  }
}

/** A loader whose loads wait for `open()` (or fail with `fail()`), counting loads and disposals;
 *  with `adapters` set, each load gets a FakeAdapters (the latest in `manager`). */
class GatedLoader {
  loads = 0;
  disposed = 0;
  gated = false;
  adapters = false;
  adapterGated = false;
  manager?: FakeAdapters;
  private gates: { open: () => void; fail: (e: Error) => void }[] = [];
  readonly load: ModelLoader = async (_p, stage) => {
    this.loads++;
    stage('tokenizer');
    if (this.gated) await new Promise<void>((open, fail) => this.gates.push({ open, fail }));
    stage('weights');
    stage('session');
    const manager = this.adapters ? new FakeAdapters() : undefined;
    if (manager) {
      manager.gated = this.adapterGated;
      this.manager = manager;
    }
    const served: ServedModel = {
      ...(manager ? { adapters: manager as unknown as AdapterManager } : {}),
      text,
      constraints: new ConstraintFactory(text.tokenizer, text.stopTokens),
      contextLength: 256,
      createSession: async () => new FakeSession(text.tokenizer.vocabSize),
      dispose: () => {
        this.disposed++;
        if (manager) manager.dead = true;
      },
    };
    return served;
  };
  open(): void {
    this.gates.shift()!.open();
  }
  fail(message: string): void {
    this.gates.shift()!.fail(new Error(message));
  }
}

const profile = (o: Partial<ModelProfile> = {}): ModelProfile => ({
  path: '/models/x',
  threads: 1,
  contextLength: 0,
  keepAliveMs: 300_000,
  queueSize: 1,
  sessions: 2,
  ...o,
});
const tick = () => new Promise((resolve) => setImmediate(resolve));

async function setup(models: Record<string, ModelProfile> = { a: profile(), b: profile() }) {
  const loader = new GatedLoader();
  const timers = new FakeTimers();
  const metrics = new ServingMetrics(new Registry());
  const reg = new ModelRegistry({ models, loader: loader.load, metrics, log: pino({ level: 'silent' }), timers });
  await reg.start();
  return { reg, loader, timers, metrics };
}

test('first use loads the model with progress; /health shows it loading for that model only', async () => {
  const { reg, loader } = await setup();
  loader.gated = true;
  const seen: LoadProgress[] = [];
  const leasing = reg.lease('a', { onProgress: (p) => seen.push(p) });
  await tick();
  assert.deepEqual(reg.modelHealth('a'), { state: 'loading', ready: false, progress: 0.05 });
  assert.deepEqual(reg.modelHealth('b'), { state: 'unloaded', ready: false });
  assert.equal(reg.health().status, 'ready', 'the service itself stays ready');
  assert.equal(reg.statusOf('a').stage, 'tokenizer');
  loader.open();
  const lease = await leasing;
  assert.deepEqual(
    seen.map((p) => [p.state, p.stage ?? null, p.progress]),
    [
      ['loading', 'prepare', 0],
      ['loading', 'tokenizer', 0.05],
      ['loading', 'weights', 0.15],
      ['loading', 'session', 0.95],
      ['loaded', null, 1],
    ],
  );
  assert.deepEqual(reg.modelHealth('a'), { state: 'loaded', ready: true });
  assert.equal(reg.statusOf('a').sessions.count, 1, 'the first session opens at load');
  lease.release();
  assert.equal(loader.loads, 1);
  (await reg.lease('a')).release();
  assert.equal(loader.loads, 1, 'a loaded model is not loaded again');
  assert.equal(reg.modelHealth('zzz'), undefined);
  assert.throws(
    () => reg.statusOf('zzz'),
    (e: unknown) =>
      e instanceof ModelNotFoundError &&
      /model "zzz" is not configured \(configured: a, b\)/.test((e as Error).message),
  );
  await reg.stop();
});

test('keep-alive: unload after the idle time; a request inside it keeps the model; 0 = now; negative = never', async () => {
  const { reg, loader, timers, metrics } = await setup();
  (await reg.lease('a')).release();
  assert.equal(reg.statusOf('a').keep_alive, '5m');
  assert.ok(reg.statusOf('a').unload_at !== null);
  timers.advance(299_999);
  assert.equal(reg.statusOf('a').state, 'loaded');
  const lease = await reg.lease('a');
  assert.equal(reg.statusOf('a').unload_at, null, 'no unload while a request runs');
  timers.advance(10_000_000);
  assert.equal(reg.statusOf('a').state, 'loaded');
  lease.release();
  timers.advance(300_000);
  assert.equal(reg.statusOf('a').state, 'unloaded');
  assert.equal(loader.disposed, 1);
  assert.equal((await metrics.loaded.get()).values.find((v) => v.labels.model === 'a')?.value, 0);

  (await reg.lease('a')).release(0);
  assert.equal(reg.statusOf('a').state, 'unloaded', 'keep_alive 0 unloads right after the request');
  assert.equal(reg.statusOf('a').keep_alive, 'now');
  (await reg.lease('a')).release();
  assert.equal(reg.statusOf('a').keep_alive, '5m', 'a request without keep_alive gets the configured one again');
  assert.equal(reg.statusOf('a').state, 'loaded');
  (await reg.lease('a')).release(-1);
  assert.equal(reg.statusOf('a').state, 'loaded');
  assert.equal(reg.statusOf('a').keep_alive, 'never');
  assert.equal(timers.live, 0);
  timers.advance(1e9);
  assert.equal(reg.statusOf('a').state, 'loaded');
  (await reg.lease('a')).release(1500);
  timers.advance(1500);
  assert.equal(reg.statusOf('a').state, 'unloaded');
  assert.equal(loader.loads, 3);
  await reg.stop();
});

test('the queue: one runs, queue_size wait in order, one more is busy; an abort while waiting frees its place', async () => {
  const { reg, metrics } = await setup({ a: profile({ queueSize: 1 }) });
  const first = await reg.lease('a');
  const ac = new AbortController();
  const second = reg.lease('a', { signal: ac.signal });
  await tick();
  const depth = async () => (await metrics.queueDepth.get()).values.find((v) => v.labels.model === 'a')?.value;
  assert.equal(await depth(), 1);
  await assert.rejects(
    reg.lease('a'),
    (e: unknown) =>
      e instanceof BusyError &&
      /model "a" is busy: 1 request already waiting \(queue_size 1\)/.test((e as Error).message),
  );
  ac.abort();
  await assert.rejects(second, CancelledError);
  assert.equal(await depth(), 0);
  const third = reg.lease('a');
  await tick();
  assert.deepEqual(reg.statusOf('a').queue, { active: 1, waiting: 1, capacity: 1, per_client: 1 });
  first.release();
  (await third).release();
  assert.deepEqual(reg.statusOf('a').queue, { active: 0, waiting: 0, capacity: 1, per_client: 1 });
  const busy = (await metrics.requests.get()).values.find((v) => v.labels.outcome === 'busy');
  assert.equal(busy?.value, 1);
  await reg.stop();
});

test('a request that gives up while the model loads leaves; the load still completes and the keep-alive unloads it', async () => {
  const { reg, loader, timers } = await setup();
  loader.gated = true;
  const ac = new AbortController();
  const leasing = reg.lease('a', { signal: ac.signal });
  await tick();
  ac.abort();
  await assert.rejects(leasing, CancelledError);
  assert.equal(reg.statusOf('a').queue.active, 0, 'its turn is released at once');
  loader.open();
  await tick();
  assert.equal(reg.statusOf('a').state, 'loaded');
  assert.equal(timers.live, 1, 'the keep-alive starts when the abandoned load completes');
  timers.advance(300_000);
  assert.equal(reg.statusOf('a').state, 'unloaded');
  assert.equal(loader.disposed, 1);

  // The same for models.load with a signal that aborts.
  const ac2 = new AbortController();
  const loading = reg.load('a', { keepAliveMs: 60_000, signal: ac2.signal });
  await tick();
  ac2.abort();
  await assert.rejects(loading, CancelledError);
  loader.open();
  await tick();
  assert.equal(reg.statusOf('a').state, 'loaded');
  assert.equal(timers.live, 1);
  timers.advance(60_000);
  assert.equal(reg.statusOf('a').state, 'unloaded');
  assert.equal(loader.disposed, 2);
  await reg.stop();
});

test('a failed load is reported with its reason and the next request tries again', async () => {
  const { reg, loader } = await setup();
  loader.gated = true;
  const seen: LoadProgress[] = [];
  const leasing = reg.lease('a', { onProgress: (p) => seen.push(p) });
  await tick();
  loader.fail('tokenizer.json: file not found');
  await assert.rejects(
    leasing,
    (e: unknown) =>
      e instanceof ModelLoadError &&
      e.message === 'model "a" (/models/x) failed to load: tokenizer.json: file not found',
  );
  assert.deepEqual(reg.modelHealth('a'), {
    state: 'failed',
    ready: false,
    error: 'model "a" (/models/x) failed to load: tokenizer.json: file not found',
  });
  assert.equal(seen.at(-1)?.state, 'failed');
  assert.equal(reg.statusOf('a').queue.active, 0);
  loader.gated = false;
  (await reg.lease('a')).release();
  assert.deepEqual(reg.modelHealth('a'), { state: 'loaded', ready: true });
  await reg.stop();
});

test('explicit load and unload: unload waits for the running request; concurrent loads share one', async () => {
  const { reg, loader, timers } = await setup();
  loader.gated = true;
  const l1 = reg.load('a');
  const l2 = reg.load('a', { keepAliveMs: 60_000 });
  await tick();
  loader.open();
  const [s1, s2] = await Promise.all([l1, l2]);
  assert.equal(loader.loads, 1);
  assert.equal(s1.state, 'loaded');
  assert.equal(s2.keep_alive, '1m');
  assert.equal(timers.live, 1, 'the keep-alive runs after an explicit load too');
  const lease = await reg.lease('a');
  let unloaded = false;
  const unloading = reg.unload('a').then((s) => ((unloaded = true), s));
  await tick();
  assert.equal(unloaded, false);
  assert.equal(lease.model.text, text);
  lease.release();
  assert.equal((await unloading).state, 'unloaded');
  assert.equal(loader.disposed, 1);
  assert.equal((await reg.unload('a')).state, 'unloaded', 'unloading an unloaded model is fine');
  // A load sent while an unload waits for a running request comes after it: unloaded, then loaded again.
  loader.gated = false;
  const running = await reg.lease('a');
  const order: string[] = [];
  const unload2 = reg.unload('a').then((x) => (order.push(`unload ${x.state}`), x));
  const load2 = reg.load('a').then((x) => (order.push(`load ${x.state}`), x));
  await tick();
  assert.deepEqual(order, [], 'both wait for the running request');
  running.release();
  await Promise.all([unload2, load2]);
  assert.deepEqual(order, ['unload unloaded', 'load loaded']);
  assert.equal(reg.statusOf('a').state, 'loaded');
  assert.equal(loader.loads, 3);
  await reg.stop();
});

test('stop refuses waiting requests, waits for the running one and unloads everything', async () => {
  const { reg, loader } = await setup({ a: profile({ queueSize: 4 }) });
  const running = await reg.lease('a');
  const waiting = reg.lease('a');
  const stopped = reg.stop();
  await assert.rejects(waiting, (e: unknown) => e instanceof CancelledError && /stopping/.test((e as Error).message));
  await tick();
  assert.equal(reg.status, 'stopping');
  running.release();
  await stopped;
  assert.equal(loader.disposed, 1);
  await assert.rejects(reg.lease('a'), CancelledError);
});

test('real timers: a wait past the 2^31 − 1 ms setTimeout takes (keep_alive 720h) fires at its time, not at once', (t) => {
  t.mock.timers.enable({ apis: ['setTimeout'] });
  let fired = 0;
  const days30 = 30 * 24 * 3600 * 1000;
  const cancel = realTimers.after(days30, () => fired++);
  t.mock.timers.tick(1000);
  assert.equal(fired, 0, 'not after a second');
  t.mock.timers.tick(2 ** 31 - 1 - 1000);
  assert.equal(fired, 0, 'not after the longest single timeout');
  t.mock.timers.tick(days30 - (2 ** 31 - 1) - 1);
  assert.equal(fired, 0, 'not a millisecond early');
  t.mock.timers.tick(1);
  assert.equal(fired, 1, 'at 30 days');
  // Cancelled part-way through the chain: never fires.
  const cancel2 = realTimers.after(days30, () => fired++);
  t.mock.timers.tick(2 ** 31);
  cancel2();
  t.mock.timers.tick(days30);
  assert.equal(fired, 1);
  cancel();
});

test('real timers, real clock: a 30-day wait has not fired 50 ms later (setTimeout alone fires after 1 ms)', async () => {
  let fired = false;
  const cancel = realTimers.after(30 * 24 * 3600 * 1000, () => (fired = true));
  await new Promise((r) => setTimeout(r, 50));
  cancel();
  assert.equal(fired, false);
});

test('an adapter for a model that takes none is refused naming the model field, not the file', async () => {
  const { reg } = await setup();
  await assert.rejects(reg.loadAdapter('a', 'style', { path: '/adapters/style', format: 'peft' } as never), {
    name: 'AdapterError',
    message: 'model "a" takes no LoRA adapters',
    field: 'model',
  });
  await reg.stop();
});

test('an adapter unloaded while a model load loads it stays unloaded: not left resident and hidden', async () => {
  const { reg, loader } = await setup();
  loader.adapters = true;
  const src = { path: '/adapters/style' } as never;
  await reg.loadAdapter('a', 'style', src);
  await reg.unload('a');
  assert.deepEqual(
    reg.adapterStatus('a').map((a) => [a.name, a.loaded]),
    [['style', false]],
  );
  loader.adapterGated = true;
  const leasing = reg.lease('a');
  while (loader.manager?.gates.length !== 1) await tick();
  assert.deepEqual(reg.unloadAdapter('a', 'style').loaded, false);
  loader.manager.open();
  const lease = await leasing;
  assert.deepEqual(reg.adapterStatus('a'), []);
  assert.equal(loader.manager.has('style'), false, 'not resident in the new load');
  lease.release();
  assert.throws(() => reg.unloadAdapter('a', 'style'), AdapterNotFoundError);
  loader.manager.gated = false;
  assert.equal((await reg.loadAdapter('a', 'style', src)).name, 'style', 'it can be loaded again');
  assert.deepEqual(
    reg.adapterStatus('a').map((a) => [a.name, a.loaded]),
    [['style', true]],
  );
  await reg.stop();
});

test('keep_alive 0 and the idle timer wait for an adapter load under way, then unload', async () => {
  const { reg, loader, timers } = await setup();
  loader.adapters = true;
  (await reg.lease('a')).release();
  loader.manager!.gated = true;
  const adding = reg.loadAdapter('a', 'style', { path: '/adapters/style' } as never);
  while (loader.manager!.gates.length !== 1) await tick();
  (await reg.lease('a')).release(1000);
  timers.advance(1000);
  assert.equal(reg.statusOf('a').state, 'loaded', 'the idle timer does not unload under the adapter load');
  (await reg.lease('a')).release(0);
  assert.equal(reg.statusOf('a').state, 'loaded', 'nor does keep_alive 0');
  assert.equal(loader.disposed, 0);
  loader.manager!.open();
  assert.equal((await adding).name, 'style');
  assert.equal(reg.statusOf('a').state, 'unloaded', 'keep_alive 0 applies once the adapter has loaded');
  assert.equal(loader.disposed, 1);
  assert.deepEqual(
    reg.adapterStatus('a').map((a) => [a.name, a.loaded]),
    [['style', false]],
    'remembered for the next load',
  );
  await reg.stop();
});

test('keep_alive 0 configured: adapters.load on an unloaded model loads the model, then the adapter, then unloads', async () => {
  const { reg, loader } = await setup({ a: profile({ keepAliveMs: 0 }) });
  loader.adapters = true;
  const info = await reg.loadAdapter('a', 'style', { path: '/adapters/style' } as never);
  assert.equal(info.name, 'style');
  assert.equal(reg.statusOf('a').state, 'unloaded');
  assert.equal(loader.disposed, 1);
  await reg.stop();
});
