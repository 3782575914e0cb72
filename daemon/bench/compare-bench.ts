// `bench compare`: our engine and llama.cpp on the same synthetic model — the MLX folder for us,
// its GGUF export for llama.cpp (Q8_0 for 8-bit weights, else Q4_0) — arms taking turns round by
// round so all see the same
// machine load. llama.cpp arms: `prebuilt` (node-llama-cpp's binary, in this process), `native`
// (llama-bench compiled on this machine, llama-build.ts) or a llama-bench path. Reports medians of
// prefill (per prompt length) and decode throughput, ratios, and each decode rate as a fraction of
// the memory roofline (measured read bandwidth / weight bytes one decoded token reads).
import { existsSync, renameSync, statSync } from 'node:fs';
import { totalmem } from 'node:os';
import { join } from 'node:path';
import type { ActivationBits } from '../native/binding.js';
import { autoSized } from './decode-bench.js';
import { llamaBenchArm } from './llama-bench-arm.js';
import { ensureNativeLlama, spawnRunner, type Runner } from './llama-build.js';
import { exportGguf, type GgufFileType } from '../tools/gguf-export.js';
import { readRefConfig } from '../tools/reference/model-config.js';
import { Prng } from '../../robot/common/prng.js';
import { EngineError, NativeModel, argmax } from '../engine/native-model.js';

export interface CompareOptions {
  model: string;
  /** GGUF file; default `<model>/model-<type>.gguf` (ggufTypeFor), exported from the folder when missing. */
  gguf?: string;
  threads: number;
  /** Prompt lengths to prefill (each from an empty cache); decode follows the first. */
  prompts: number[];
  gen: number;
  rounds: number;
  seed: number;
  /** Our kernel set (default "auto"). */
  backend?: string;
  /** KV cache type of both arms (llama.cpp's default is f16). */
  kvCache: 'f16' | 'f32';
  /** Our integer decode activations (default 16 bits; 24 is ~100× closer to exact, slower). */
  activationBits?: ActivationBits;
  /** llama.cpp arms in order: 'prebuilt', 'native', 'native-avx2' or a llama-bench path (default ['prebuilt']). */
  llama?: string[];
  /** Where 'native' builds are cached (<dataDir>/llama.cpp/...). */
  dataDir?: string;
  /** Runs llama-bench and the build (injected in tests). */
  run?: Runner;
  /** Run llama.cpp on its CUDA build with every layer on the GPU (default: its CPU build). */
  llamaCuda?: boolean;
  /** Every arm warms up right before its timed runs in each round, not once before the rounds
   *  (default: when our weight files and the GGUF together pass 3/4 of the machine's memory, so
   *  one arm's run would evict the other's pages and a round would time disk reads). */
  warmEach?: boolean;
  /** Called with a line of progress (GGUF export, rounds). */
  log?: (line: string) => void;
}

/** One arm's timing of one round, in seconds. */
export interface ArmTiming {
  prefillS: number;
  decodeS: number;
}

/** A loaded engine the comparison can time: prefill `prompt`, then `gen` greedy decode steps. */
export interface BenchArm {
  name: string;
  run(prompt: number[], gen: number): Promise<ArmTiming>;
  dispose(): Promise<void>;
}

/** Our arm also knows its kernel set, vocabulary and the weight bytes a decoded token read. */
export interface OurArm extends BenchArm {
  backend: string;
  activationBits: number;
  prefillChunk: number;
  vocab: number;
  /** Bytes of the model's weight files. */
  fileBytes: number;
  activeBytes(): number;
}

export interface ArmReport {
  name: string;
  /** At the first prompt length. */
  prefill_tok_s: number;
  /** Median prefill tok/s per prompt length. */
  prefill_by_prompt: Record<string, number>;
  decode_tok_s: number;
  /** Per round, in round order (prefill at the first prompt length). */
  prefill_rounds: number[];
  decode_rounds: number[];
  /** decode_tok_s / roofline_decode_tok_s. */
  decode_roofline_fraction: number;
}

/** A llama.cpp arm with our speed relative to it (brainstem ÷ this arm). */
export interface LlamaArmReport extends ArmReport {
  decode_ratio: number;
  prefill_ratio: number;
  prefill_ratio_by_prompt: Record<string, number>;
}

export interface CompareReport {
  model: string;
  gguf: string;
  threads: number;
  prompt_tokens: number[];
  gen_tokens: number;
  rounds: number;
  kv_cache: string;
  backend: string;
  activation_bits: number;
  /** Our tokens per prefill step (the auto-size's, as the daemon loads the model). */
  prefill_chunk: number;
  /** Whether each arm warmed up before its timed runs in every round (CompareOptions.warmEach). */
  warm_each: boolean;
  /** Median read bandwidth measured before each round with `threads` threads (GB/s). */
  membw_gb_s: number;
  /** Weight bytes our engine reads per decoded token (llama.cpp's Q4_0 / Q8_0 read about as
   *  many: 4.5 / 8.5 bits per weight, like MLX 4- / 8-bit with group 64). */
  active_bytes_per_token: number;
  /** membw / active bytes: the decode rate if reading the weights were the only cost. */
  roofline_decode_tok_s: number;
  brainstem: ArmReport;
  /** The first llama.cpp arm (as in llama_arms). */
  llama_cpp: LlamaArmReport;
  llama_arms: LlamaArmReport[];
  /** brainstem / the first llama.cpp arm. */
  decode_ratio: number;
  prefill_ratio: number;
}

export class LlamaCppMissingError extends Error {
  constructor(detail: string) {
    super(
      `node-llama-cpp is not installed (${detail}); it is a devDependency of brainstem: ` +
        'install dev dependencies (npm install --include=dev) to run bench compare',
    );
    this.name = 'LlamaCppMissingError';
  }
}

export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

/** llama.cpp's format nearest the model's weights: Q8_0 for 8-bit MLX weights (about the same
 *  bytes per weight as ours, and llama.cpp's fast 8-bit CPU path), else Q4_0. */
export function ggufTypeFor(model: string): GgufFileType {
  return readRefConfig(model).quant?.bits === 8 ? 'q8_0' : 'q4_0';
}

/** The GGUF path to use, exporting `<model>/model-<type>.gguf` from the MLX folder if needed. */
export function resolveGguf(model: string, gguf: string | undefined, log: (line: string) => void): string {
  if (gguf !== undefined) {
    if (!existsSync(gguf)) throw new EngineError(`--gguf ${gguf} does not exist`);
    if (!statSync(gguf).isFile()) throw new EngineError(`--gguf ${gguf} is not a file (a .gguf file is expected)`);
    return gguf;
  }
  const type = ggufTypeFor(model);
  const path = join(model, `model-${type}.gguf`);
  if (!existsSync(path)) {
    log(`writing ${path} (GGUF ${type.toUpperCase()} export of ${model}) for llama.cpp`);
    // Written beside and renamed when whole: an interrupted export is not taken for a GGUF.
    exportGguf(model, `${path}.partial`, type, `brainstem bench compare export of ${model}`);
    renameSync(`${path}.partial`, path);
  }
  return path;
}

export async function ourArm(
  model: string,
  o: Pick<CompareOptions, 'threads' | 'backend' | 'kvCache' | 'activationBits' | 'prompts' | 'gen'>,
): Promise<OurArm> {
  // The daemon's choices for this model under this machine's budget (paths, prefill chunk).
  const { sized } = autoSized(model, {});
  const m = await NativeModel.load(model, {
    ...sized,
    threads: o.threads,
    contextLength: Math.max(...o.prompts) + o.gen + 1,
    kvCache: o.kvCache,
    ...(o.activationBits ? { activationBits: o.activationBits } : {}),
    ...(o.backend ? { backend: o.backend } : {}),
  });
  await m.prefaultDone(); // the weights' background mapping ends before any run, as llama.cpp's MAP_POPULATE
  let active = 0;
  const clock = () => performance.now() / 1e3;
  return {
    name: 'brainstem',
    backend: m.summary.backend,
    activationBits: m.summary.activationBits,
    prefillChunk: m.summary.prefillChunk,
    vocab: m.summary.vocabSize,
    fileBytes: m.summary.fileBytes,
    activeBytes: () => active,
    async run(prompt, gen) {
      const s = await m.createSession();
      try {
        const t0 = clock();
        let token = argmax(await s.prefill(prompt));
        const t1 = clock();
        const before = s.info().weightBytes;
        // As greedy requests are served (the logits stay native); llama-bench samples nothing.
        for (let i = 0; i < gen; i++) token = await s.decodeGreedy(token);
        const t2 = clock();
        if (gen > 0) active = (s.info().weightBytes - before) / gen;
        return { prefillS: t1 - t0, decodeS: t2 - t1 };
      } finally {
        s.dispose();
      }
    },
    async dispose() {
      m.dispose();
    },
  };
}

export async function llamaArm(
  gguf: string,
  o: Pick<CompareOptions, 'threads' | 'kvCache' | 'prompts' | 'gen' | 'llamaCuda'>,
): Promise<BenchArm> {
  let lib: typeof import('node-llama-cpp');
  try {
    lib = await import('node-llama-cpp');
  } catch (err) {
    throw new LlamaCppMissingError((err as Error).message.split('\n')[0]!);
  }
  // Prebuilt binaries only (CPU, or CUDA when asked): never build, never download.
  const llama = await lib.getLlama({
    gpu: o.llamaCuda ? 'cuda' : false,
    build: 'never',
    skipDownload: true,
    usePrebuiltBinaries: true,
    progressLogs: false,
    logLevel: lib.LlamaLogLevel.error,
    maxThreads: o.threads,
  });
  const model = await llama.loadModel({ modelPath: gguf, gpuLayers: o.llamaCuda ? 'max' : 0 });
  const kv = o.kvCache === 'f16' ? 'F16' : 'F32';
  const longest = Math.max(...o.prompts);
  const ctx = await model.createContext({
    contextSize: longest + o.gen + 8,
    batchSize: Math.max(longest, 1),
    threads: { ideal: o.threads, min: o.threads },
    flashAttention: false,
    experimentalKvCacheKeyType: kv,
    experimentalKvCacheValueType: kv,
  });
  const seq = ctx.getSequence();
  const clock = () => performance.now() / 1e3;
  return {
    name: o.llamaCuda ? 'prebuilt-cuda' : 'prebuilt',
    async run(prompt, gen) {
      await seq.clearHistory();
      const tokens = prompt as import('node-llama-cpp').Token[];
      const t0 = clock();
      await seq.evaluateWithoutGeneratingNewTokens(tokens);
      const t1 = clock();
      // Each step evaluates the previous token and samples the next (greedy, never stopping).
      const it = seq.evaluate([tokens[tokens.length - 1]!], { temperature: 0, yieldEogToken: true });
      for (let i = 0; i < gen; i++) await it.next();
      await it.return();
      const t2 = clock();
      return { prefillS: t1 - t0, decodeS: t2 - t1 };
    },
    async dispose() {
      await ctx.dispose();
      await model.dispose();
      await llama.dispose();
    },
  };
}

function report(name: string, t: ArmTiming[][], o: CompareOptions, roofline: number): ArmReport {
  const byPrompt = o.prompts.map((p, i) => t.map((round) => p / round[i]!.prefillS));
  const decode = t.map((round) => (o.gen > 0 ? o.gen / round[0]!.decodeS : 0));
  const d = median(decode);
  return {
    name,
    prefill_tok_s: median(byPrompt[0]!),
    prefill_by_prompt: Object.fromEntries(o.prompts.map((p, i) => [String(p), median(byPrompt[i]!)])),
    decode_tok_s: d,
    prefill_rounds: byPrompt[0]!,
    decode_rounds: decode,
    decode_roofline_fraction: roofline > 0 ? d / roofline : 0,
  };
}

const ratio = (a: number, b: number) => (b > 0 ? a / b : 0);

function against(ours: ArmReport, l: ArmReport): LlamaArmReport {
  return {
    ...l,
    decode_ratio: ratio(ours.decode_tok_s, l.decode_tok_s),
    prefill_ratio: ratio(ours.prefill_tok_s, l.prefill_tok_s),
    prefill_ratio_by_prompt: Object.fromEntries(
      Object.entries(ours.prefill_by_prompt).map(([p, v]) => [p, ratio(v, l.prefill_by_prompt[p]!)]),
    ),
  };
}

/** A llama-bench path: the binary itself, or a llama.cpp build folder holding bin/llama-bench. */
export function llamaBenchPath(path: string): string {
  if (!existsSync(path)) throw new EngineError(`--llama ${path} does not exist`);
  if (!statSync(path).isDirectory()) {
    if (/\.(so|dylib|dll)(\.|$)/.test(path))
      throw new EngineError(`--llama ${path} is a library; give a llama-bench binary or a llama.cpp build folder`);
    return path;
  }
  const found = ['build/bin/llama-bench', 'bin/llama-bench', 'llama-bench'].map((p) => join(path, p)).find(existsSync);
  if (!found) throw new EngineError(`--llama ${path} is a folder without bin/llama-bench (a llama.cpp build folder)`);
  return found;
}

async function llamaArms(o: CompareOptions, gguf: string, log: (line: string) => void): Promise<BenchArm[]> {
  const arms: BenchArm[] = [];
  const run = o.run ?? spawnRunner;
  try {
    for (const spec of o.llama ?? ['prebuilt']) {
      if (spec === 'prebuilt') arms.push(await llamaArm(gguf, o));
      else {
        const binary =
          spec === 'native' || spec === 'native-avx2'
            ? (
                await ensureNativeLlama({
                  dataDir: o.dataDir ?? '.',
                  run,
                  log,
                  isa: spec === 'native' ? 'native' : 'avx2',
                })
              ).binary
            : llamaBenchPath(spec);
        arms.push(llamaBenchArm({ name: spec, binary, gguf, threads: o.threads, kvCache: o.kvCache, run }));
      }
    }
    return arms;
  } catch (e) {
    for (const a of arms) await a.dispose();
    throw e;
  }
}

/** Runs the comparison. `membw(threads)` measures read bandwidth in GB/s (before each
 *  round); arms are injectable for tests (default: ours and the `llama` arms, loaded here). */
export async function runCompareBench(
  o: CompareOptions,
  membw: (threads: number) => Promise<number>,
  arms?: { ours: OurArm; llama: BenchArm[] },
): Promise<CompareReport> {
  const log = o.log ?? (() => {});
  const gguf = arms ? (o.gguf ?? '') : resolveGguf(o.model, o.gguf, log);
  let ours = arms?.ours;
  let llama = arms?.llama;
  try {
    ours ??= await ourArm(o.model, o);
    llama ??= await llamaArms(o, gguf, log);
    const rng = new Prng(o.seed);
    const longest = Array.from({ length: Math.max(...o.prompts) }, () => rng.int(ours!.vocab));
    const all: BenchArm[] = [ours, ...llama];
    const timings = new Map<BenchArm, ArmTiming[][]>(all.map((a) => [a, []]));
    const warmEach = o.warmEach ?? ours.fileBytes + (gguf ? statSync(gguf).size : 0) > 0.75 * totalmem();
    // An untimed run per arm (llama-bench also warms up inside each call): the first touch of
    // the weights (page faults, first-use scans, allocations) is not a round's speed.
    const warm = async (arm: BenchArm) => {
      await arm.run(longest.slice(0, o.prompts[0]), 1);
      log(`warm-up ${arm.name}`);
    };
    if (!warmEach) for (const arm of all) await warm(arm);
    const bw: number[] = [];
    for (let r = 0; r < o.rounds; r++) {
      bw.push(await membw(o.threads));
      // Rotate which arm goes first, so none always meets a warmer or colder machine.
      const order = all.map((_, i) => all[(i + r) % all.length]!);
      for (const arm of order) {
        if (warmEach) await warm(arm);
        const round: ArmTiming[] = [];
        for (const [i, p] of o.prompts.entries()) {
          const t = await arm.run(longest.slice(0, p), i === 0 ? o.gen : 0);
          round.push(t);
          const decode = i === 0 ? `, decode ${(o.gen / t.decodeS).toFixed(2)} tok/s` : '';
          log(`round ${r + 1}/${o.rounds} ${arm.name}: prefill ${p} ${(p / t.prefillS).toFixed(1)} tok/s${decode}`);
        }
        timings.get(arm)!.push(round);
      }
    }
    const membwGbS = median(bw);
    const active = ours.activeBytes();
    const roofline = active > 0 ? (membwGbS * 1e9) / active : 0;
    const b = report(ours.name, timings.get(ours)!, o, roofline);
    const ls = llama.map((a) => against(b, report(a.name, timings.get(a)!, o, roofline)));
    return {
      model: o.model,
      gguf,
      threads: o.threads,
      prompt_tokens: o.prompts,
      gen_tokens: o.gen,
      rounds: o.rounds,
      kv_cache: o.kvCache,
      backend: ours.backend,
      activation_bits: ours.activationBits,
      prefill_chunk: ours.prefillChunk,
      warm_each: warmEach,
      membw_gb_s: membwGbS,
      active_bytes_per_token: active,
      roofline_decode_tok_s: roofline,
      brainstem: b,
      llama_cpp: ls[0]!,
      llama_arms: ls,
      decode_ratio: ls[0]!.decode_ratio,
      prefill_ratio: ls[0]!.prefill_ratio,
    };
  } finally {
    if (!arms) {
      await ours?.dispose();
      for (const a of llama ?? []) await a.dispose();
    }
  }
}
