// `bench compare`: our engine and llama.cpp (node-llama-cpp, a dev dependency) on the same
// synthetic model — the MLX folder for us, its GGUF Q4_0 export for llama.cpp — in one
// process, arms alternating round by round so both see the same machine load. Reports
// medians of prefill and decode throughput, their ratios, and each decode rate as a fraction
// of the memory roofline (measured read bandwidth / weight bytes one decoded token reads).
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { exportGguf } from '../tools/gguf-export.js';
import { Prng } from '../../robot/common/prng.js';
import { EngineError, NativeModel, argmax } from '../engine/native-model.js';

export interface CompareOptions {
  model: string;
  /** GGUF file; default `<model>/model-q4_0.gguf`, exported from the folder when missing. */
  gguf?: string;
  threads: number;
  prompt: number;
  gen: number;
  rounds: number;
  seed: number;
  /** Our kernel set (default "auto"). */
  backend?: string;
  /** KV cache type of both arms (llama.cpp's default is f16). */
  kvCache: 'f16' | 'f32';
  /** Our integer decode activations (default 16 bits; 24 is ~100× closer to exact, slower). */
  activationBits?: 16 | 24;
  /** Run llama.cpp on its CUDA build with every layer on the GPU (default: its CPU build). */
  llamaCuda?: boolean;
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
  vocab: number;
  activeBytes(): number;
}

export interface ArmReport {
  prefill_tok_s: number;
  decode_tok_s: number;
  /** Per round, in round order. */
  prefill_rounds: number[];
  decode_rounds: number[];
  /** decode_tok_s / roofline_decode_tok_s. */
  decode_roofline_fraction: number;
}

export interface CompareReport {
  model: string;
  gguf: string;
  threads: number;
  prompt_tokens: number;
  gen_tokens: number;
  rounds: number;
  kv_cache: string;
  backend: string;
  activation_bits: number;
  /** Median read bandwidth measured before each round with `threads` threads (GB/s). */
  membw_gb_s: number;
  /** Weight bytes our engine reads per decoded token (llama.cpp's Q4_0 reads about as many:
   *  4.5 bits per weight, like MLX 4-bit with group 64). */
  active_bytes_per_token: number;
  /** membw / active bytes: the decode rate if reading the weights were the only cost. */
  roofline_decode_tok_s: number;
  brainstem: ArmReport;
  llama_cpp: ArmReport;
  /** brainstem / llama.cpp. */
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

/** The GGUF path to use, exporting `<model>/model-q4_0.gguf` from the MLX folder if needed. */
export function resolveGguf(model: string, gguf: string | undefined, log: (line: string) => void): string {
  if (gguf !== undefined) {
    if (!existsSync(gguf)) throw new EngineError(`--gguf ${gguf} does not exist`);
    if (!statSync(gguf).isFile()) throw new EngineError(`--gguf ${gguf} is not a file (a .gguf file is expected)`);
    return gguf;
  }
  const path = join(model, 'model-q4_0.gguf');
  if (!existsSync(path)) {
    log(`writing ${path} (GGUF Q4_0 export of ${model}) for llama.cpp`);
    exportGguf(model, path, 'q4_0', `brainstem bench compare export of ${model}`);
  }
  return path;
}

export async function ourArm(
  model: string,
  o: Pick<CompareOptions, 'threads' | 'backend' | 'kvCache' | 'activationBits' | 'prompt' | 'gen'>,
): Promise<OurArm> {
  const m = await NativeModel.load(model, {
    threads: o.threads,
    contextLength: o.prompt + o.gen + 1,
    kvCache: o.kvCache,
    ...(o.activationBits ? { activationBits: o.activationBits } : {}),
    ...(o.backend ? { backend: o.backend } : {}),
  });
  let active = 0;
  const clock = () => performance.now() / 1e3;
  return {
    name: 'brainstem',
    backend: m.summary.backend,
    activationBits: m.summary.activationBits,
    vocab: m.summary.vocabSize,
    activeBytes: () => active,
    async run(prompt, gen) {
      const s = await m.createSession();
      try {
        const t0 = clock();
        let logits = await s.prefill(prompt);
        const t1 = clock();
        const before = s.info().weightBytes;
        for (let i = 0; i < gen; i++) logits = await s.decode(argmax(logits));
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
  o: Pick<CompareOptions, 'threads' | 'kvCache' | 'prompt' | 'gen' | 'llamaCuda'>,
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
  const ctx = await model.createContext({
    contextSize: o.prompt + o.gen + 8,
    batchSize: Math.max(o.prompt, 1),
    threads: { ideal: o.threads, min: o.threads },
    flashAttention: false,
    experimentalKvCacheKeyType: kv,
    experimentalKvCacheValueType: kv,
  });
  const seq = ctx.getSequence();
  const clock = () => performance.now() / 1e3;
  return {
    name: o.llamaCuda ? 'llama.cpp (cuda)' : 'llama.cpp',
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

function report(t: ArmTiming[], o: CompareOptions, roofline: number): ArmReport {
  const prefill = t.map((x) => o.prompt / x.prefillS);
  const decode = t.map((x) => (o.gen > 0 ? o.gen / x.decodeS : 0));
  const d = median(decode);
  return {
    prefill_tok_s: median(prefill),
    decode_tok_s: d,
    prefill_rounds: prefill,
    decode_rounds: decode,
    decode_roofline_fraction: roofline > 0 ? d / roofline : 0,
  };
}

/** Runs the comparison. `membw(threads)` measures read bandwidth in GB/s (before each
 *  round); arms are injectable for tests (default: ours and llama.cpp, loaded here). */
export async function runCompareBench(
  o: CompareOptions,
  membw: (threads: number) => Promise<number>,
  arms?: { ours: OurArm; llama: BenchArm },
): Promise<CompareReport> {
  const log = o.log ?? (() => {});
  const gguf = arms ? (o.gguf ?? '') : resolveGguf(o.model, o.gguf, log);
  let ours = arms?.ours;
  let llama = arms?.llama;
  try {
    ours ??= await ourArm(o.model, o);
    llama ??= await llamaArm(gguf, o);
    const rng = new Prng(o.seed);
    const prompt = Array.from({ length: o.prompt }, () => rng.int(ours!.vocab));
    const mine: ArmTiming[] = [];
    const theirs: ArmTiming[] = [];
    const bw: number[] = [];
    for (let r = 0; r < o.rounds; r++) {
      bw.push(await membw(o.threads));
      // Alternate which arm goes first, so neither always meets a warmer or colder machine.
      const order: BenchArm[] = r % 2 === 0 ? [ours, llama] : [llama, ours];
      for (const arm of order) {
        const t = await arm.run(prompt, o.gen);
        (arm === ours ? mine : theirs).push(t);
        log(
          `round ${r + 1}/${o.rounds} ${arm.name}: prefill ${(o.prompt / t.prefillS).toFixed(1)} tok/s, decode ${(o.gen / t.decodeS).toFixed(2)} tok/s`,
        );
      }
    }
    const membwGbS = median(bw);
    const active = ours.activeBytes();
    const roofline = active > 0 ? (membwGbS * 1e9) / active : 0;
    const b = report(mine, o, roofline);
    const l = report(theirs, o, roofline);
    return {
      model: o.model,
      gguf,
      threads: o.threads,
      prompt_tokens: o.prompt,
      gen_tokens: o.gen,
      rounds: o.rounds,
      kv_cache: o.kvCache,
      backend: ours.backend,
      activation_bits: ours.activationBits,
      membw_gb_s: membwGbS,
      active_bytes_per_token: active,
      roofline_decode_tok_s: roofline,
      brainstem: b,
      llama_cpp: l,
      decode_ratio: l.decode_tok_s > 0 ? b.decode_tok_s / l.decode_tok_s : 0,
      prefill_ratio: l.prefill_tok_s > 0 ? b.prefill_tok_s / l.prefill_tok_s : 0,
    };
  } finally {
    if (!arms) {
      await ours?.dispose();
      await llama?.dispose();
    }
  }
}
