// `bench decode`: loads a model, prefills a seeded random prompt, decodes greedily and
// reports throughput, memory (anonymous vs file-backed) and the weight bytes each decoded
// token read, so speed can be compared with the machine's bandwidth roofline.
import { Prng } from '../util/prng.js';
import { diskReadBytes, memoryStats } from '../util/proc-stats.js';
import { readAdapter } from './adapters/read-adapter.js';
import { NativeModel, argmax } from './native-model.js';

export interface DecodeBenchOptions {
  model: string;
  threads: number;
  prompt: number;
  gen: number;
  /** Routing width override (experts per token). */
  topK?: number;
  seed: number;
  /** Kernel set (default "auto"). */
  backend?: string;
  kvCache?: 'f32' | 'f16';
  /** A LoRA adapter (PEFT, mlx-lm or Edge0 folder) the session runs with, unmerged. */
  adapter?: string;
}

export interface DecodeBenchResult {
  model: string;
  arch: string;
  backend: string;
  kv_cache: string;
  threads: number;
  top_k: number;
  prompt_tokens: number;
  gen_tokens: number;
  load_ms: number;
  ttft_ms: number;
  prefill_tok_s: number;
  decode_tok_s: number;
  active_bytes_per_token: number;
  /** active bytes per token × decode tok/s: the read bandwidth decode achieved. */
  decode_read_gb_s: number;
  weight_file_bytes: number;
  kv_cache_bytes: number;
  rss_anon_bytes: number | null;
  rss_file_bytes: number | null;
  peak_rss_bytes: number | null;
  disk_read_bytes: number | null;
  /** The adapter decode ran with, or null for the base model. */
  adapter: { format: string; modules: number; ranks: number[]; bytes: number } | null;
}

/** Seconds between two clock readings (nanoseconds). */
const seconds = (a: bigint, b: bigint) => Number(b - a) / 1e9;

export async function runDecodeBench(
  opts: DecodeBenchOptions,
  clock: () => bigint = () => process.hrtime.bigint(),
): Promise<DecodeBenchResult> {
  const read0 = diskReadBytes();
  const t0 = clock();
  const model = await NativeModel.load(opts.model, {
    threads: opts.threads,
    contextLength: opts.prompt + opts.gen,
    ...(opts.topK ? { topK: opts.topK } : {}),
    ...(opts.backend ? { backend: opts.backend } : {}),
    ...(opts.kvCache ? { kvCache: opts.kvCache } : {}),
  });
  try {
    let adapter: DecodeBenchResult['adapter'] = null;
    const session = await model.createSession();
    if (opts.adapter) {
      const plan = readAdapter(opts.adapter, { layers: model.summary.layers });
      const loaded = await model.loadAdapter(plan);
      session.setAdapter(loaded);
      const ranks = [...new Set(loaded.summary.modules.map((m) => m.rank))].sort((a, b) => a - b);
      adapter = { format: plan.format, modules: plan.modules.length, ranks, bytes: loaded.summary.bytes };
    }
    const t1 = clock();
    const rng = new Prng(opts.seed);
    const prompt = Int32Array.from({ length: opts.prompt }, () => rng.int(model.summary.vocabSize));
    const t2 = clock();
    let logits = await session.prefill(prompt);
    const t3 = clock();
    const afterPrefill = session.info().weightBytes;
    for (let i = 0; i < opts.gen; i++) logits = await session.decode(argmax(logits));
    const t4 = clock();
    const info = session.info();
    const mem = memoryStats();
    const read1 = diskReadBytes();
    const activeBytes = opts.gen > 0 ? (info.weightBytes - afterPrefill) / opts.gen : 0;
    const decodeTokS = opts.gen > 0 ? opts.gen / seconds(t3, t4) : 0;
    session.dispose();
    return {
      model: opts.model,
      arch: model.summary.arch,
      backend: model.summary.backend,
      kv_cache: model.summary.kvCache,
      threads: model.summary.threads,
      top_k: model.summary.topK,
      prompt_tokens: opts.prompt,
      gen_tokens: opts.gen,
      load_ms: seconds(t0, t1) * 1e3,
      ttft_ms: seconds(t2, t3) * 1e3,
      prefill_tok_s: opts.prompt / seconds(t2, t3),
      decode_tok_s: decodeTokS,
      active_bytes_per_token: activeBytes,
      decode_read_gb_s: (activeBytes * decodeTokS) / 1e9,
      weight_file_bytes: model.summary.fileBytes,
      kv_cache_bytes: info.stateBytes,
      rss_anon_bytes: mem.rssAnonBytes,
      rss_file_bytes: mem.rssFileBytes,
      peak_rss_bytes: mem.peakRssBytes,
      disk_read_bytes: read0 === null || read1 === null ? null : read1 - read0,
      adapter,
    };
  } finally {
    model.dispose();
  }
}
