// `bench decode`: loads a model with a streaming profile, prefills a seeded random prompt,
// decodes greedily (decodeGreedy: the logits stay native) and reports throughput, memory (anonymous vs file-backed), the weight bytes
// each decoded token read, and what the expert executor did per decoded token: time blocked
// on expert loads, bytes read from disk, slot hit rate, unused prefetches, prediction recall.
import { Prng } from '../../robot/common/prng.js';
import { diskReadBytes, memoryStats } from '../util/proc-stats.js';
import type {
  ActivationBits,
  ExpertPath,
  IoMode,
  LoadModelOptions,
  PrefaultStatus,
  StreamStats,
} from '../native/binding.js';
import { readAdapter } from '../engine/adapters/read-adapter.js';
import { NativeModel, argmax } from '../engine/native-model.js';
import { tryAutoStreamFor } from '../engine/stream-budget.js';
import { decodeBreakdown, EMPTY_PROFILE, type DecodeBreakdown } from './decode-breakdown.js';

/** What differs between the arms of a comparison: the streaming profile. */
export type BenchProfile = Pick<
  LoadModelOptions,
  'topK' | 'prefillPath' | 'decodePath' | 'slots' | 'cacheBytes' | 'ioThreads' | 'ioMode' | 'prerouter' | 'prefault'
>;

export interface DecodeBenchOptions extends BenchProfile {
  model: string;
  threads: number;
  prompt: number;
  gen: number;
  seed: number;
  /** Kernel set (default "auto"). */
  backend?: string;
  kvCache?: 'f32' | 'f16';
  /** Integer decode activations (default 16 bits; 24 is ~100× closer to exact, slower). */
  activationBits?: ActivationBits;
  /** Tokens per prefill forward step (default: the auto-size's, 512 unless streaming leaves no room, then 128). */
  prefillChunk?: number;
  /** A LoRA adapter (PEFT, mlx-lm or Edge0 folder) the session runs with, unmerged. */
  adapter?: string;
  /** Time each stage of the decode steps (the `breakdown` field). */
  breakdown?: boolean;
}

export interface DecodeBenchResult {
  model: string;
  arch: string;
  backend: string;
  kv_cache: string;
  activation_bits: number;
  prefill_chunk: number;
  /** The weights' background mapping, waited for before the prefill: "off", "mapped", or
   *  "advised" where the OS could only be asked to read them. */
  prefault: 'off' | PrefaultStatus['state'];
  /** From the end of the load to the end of that mapping (0 when off). */
  prefault_ms: number;
  threads: number;
  top_k: number;
  prefill_path: ExpertPath;
  decode_path: ExpertPath;
  io_mode: IoMode;
  prerouter: string | null;
  prompt_tokens: number;
  gen_tokens: number;
  load_ms: number;
  ttft_ms: number;
  prefill_tok_s: number;
  decode_tok_s: number;
  active_bytes_per_token: number;
  /** active bytes per token × decode tok/s: the read bandwidth decode achieved. */
  decode_read_gb_s: number;
  /** Decode: time compute waited on expert loads, per token. */
  blocked_ms_per_token: number;
  /** Decode: bytes this process read from storage (read_bytes of /proc/self/io) per token. */
  disk_read_bytes_per_token: number | null;
  /** Decode: expert bytes the I/O threads read (from disk or page cache) per token. */
  expert_read_bytes_per_token: number;
  /** Decode: routed experts whose pages were requested from the OS per token (0 once no pass reads storage). */
  read_hints_per_token: number;
  /** Decode: bytes read into the page cache ahead of use for predicted experts, per token (exact / hot). */
  warm_bytes_per_token: number;
  /** Decode: routed experts whose page-cache warm had finished in time / experts warmed (null when none). */
  warm_hit_rate: number | null;
  /** Decode: routed experts found in a slot / all slot lookups (null when no slot path ran). */
  slot_hit_rate: number | null;
  /** Decode: prefetched expert bytes replaced before any use (total). */
  prefetch_unused_bytes: number;
  /** Decode: predicted experts the true router also chose / all predicted (null without prerouter). */
  prediction_recall: number | null;
  /** Slot and layer buffers of the executor (anonymous memory). */
  expert_buffer_bytes: number;
  weight_file_bytes: number;
  kv_cache_bytes: number;
  rss_anon_bytes: number | null;
  rss_file_bytes: number | null;
  peak_rss_bytes: number | null;
  disk_read_bytes: number | null;
  /** The memory limit the run was under (set by the caller that ran it in a cgroup). */
  mem_limit_bytes: number | null;
  /** What the auto-size chose for the keys no flag set, and why (null when every key was set). */
  auto: { budget_bytes: number; budget_source: string; keys: string[]; reasons: string[] } | null;
  /** The adapter decode ran with, or null for the base model. */
  adapter: { format: string; modules: number; ranks: number[]; bytes: number } | null;
  /** Where a decoded token's time went (with --breakdown), else null. */
  breakdown: DecodeBreakdown | null;
  /** Where the prefill's time went (with --breakdown), per forward step of up to `prefill_chunk`
   *  tokens (its `*_per_token` fields are per step), else null. */
  prefill_breakdown: DecodeBreakdown | null;
}

/** Seconds between two clock readings (nanoseconds). */
const seconds = (a: bigint, b: bigint) => Number(b - a) / 1e9;

function delta(a: StreamStats, b: StreamStats): StreamStats {
  const out = { ...b };
  for (const k of Object.keys(b) as (keyof StreamStats)[]) out[k] = b[k] - a[k];
  return out;
}

const SIZED = ['prefillPath', 'decodePath', 'slots', 'cacheBytes', 'ioThreads', 'ioMode'] as const;

/** The auto-size's values for the streaming keys the profile leaves unset (flags override), and
 * its prefill chunk when no chunk was given and the prefill path is the auto-size's. */
export function autoSized(
  dir: string,
  profile: BenchProfile & { prefillChunk?: number },
): { sized: BenchProfile & { prefillChunk?: number }; auto: DecodeBenchResult['auto'] } {
  const keys: string[] = SIZED.filter((k) => profile[k] === undefined);
  const chunk = profile.prefillChunk === undefined;
  if (profile.prefault === undefined) keys.push('prefault');
  const a = keys.length > 0 || chunk ? tryAutoStreamFor(dir, profile.topK) : undefined;
  if (!a) return { sized: {}, auto: null };
  const sized: BenchProfile & { prefillChunk?: number } = {};
  for (const k of SIZED) {
    const v = a[k];
    if (profile[k] === undefined && v) Object.assign(sized, { [k]: v });
  }
  if (profile.prefault === undefined) sized.prefault = a.resident; // as the daemon loads it
  if (chunk && (profile.prefillPath ?? a.prefillPath) === a.prefillPath) {
    sized.prefillChunk = a.prefillChunk;
    keys.push('prefillChunk');
  }
  if (keys.length === 0) return { sized: {}, auto: null };
  return {
    sized,
    auto: { budget_bytes: a.budget.bytes, budget_source: a.budget.source, keys, reasons: a.reasons },
  };
}

export async function runDecodeBench(
  opts: DecodeBenchOptions,
  clock: () => bigint = () => process.hrtime.bigint(),
): Promise<DecodeBenchResult> {
  const read0 = diskReadBytes();
  const t0 = clock();
  const {
    model: dir,
    threads,
    prompt: promptLen,
    gen: genLen,
    seed,
    adapter: adapterDir,
    breakdown: timeStages,
    ...profile
  } = opts;
  const prerouter = profile.prerouter ?? 'off';
  const { sized, auto } = autoSized(dir, profile);
  const model = await NativeModel.load(dir, {
    ...sized,
    ...profile,
    threads,
    contextLength: promptLen + genLen,
    prerouter,
    measureRecall: prerouter !== 'off',
    ...(timeStages ? { profile: true } : {}),
  });
  try {
    let adapter: DecodeBenchResult['adapter'] = null;
    const session = await model.createSession();
    if (adapterDir) {
      const plan = await readAdapter(adapterDir, { layers: model.summary.layers });
      const loaded = await model.loadAdapter(plan);
      session.setAdapter(loaded);
      const ranks = [...new Set(loaded.summary.modules.map((m) => m.rank))].sort((a, b) => a - b);
      adapter = { format: plan.format, modules: plan.modules.length, ranks, bytes: loaded.summary.bytes };
    }
    const t1 = clock();
    // The background mapping ends before the timed prefill, as llama.cpp's MAP_POPULATE ends
    // inside its load.
    const mapped = await model.prefaultDone();
    const t1m = clock();
    const rng = new Prng(opts.seed);
    const prompt = Int32Array.from({ length: opts.prompt }, () => rng.int(model.summary.vocabSize));
    const start = session.info();
    const t2 = clock();
    let token = argmax(await session.prefill(prompt));
    const t3 = clock();
    const before = session.info();
    const diskBefore = diskReadBytes();
    // As greedy requests are served: only the next token comes back from each step.
    for (let i = 0; i < opts.gen; i++) token = await session.decodeGreedy(token);
    const t4 = clock();
    const diskAfter = diskReadBytes();
    const info = session.info();
    const mem = memoryStats();
    const read1 = diskReadBytes();
    const st = delta(before.stream, info.stream);
    const gen = Math.max(1, opts.gen);
    const activeBytes = opts.gen > 0 ? (info.weightBytes - before.weightBytes) / opts.gen : 0;
    const decodeTokS = opts.gen > 0 ? opts.gen / seconds(t3, t4) : 0;
    const lookups = st.slotHits + st.slotMisses;
    session.dispose();
    return {
      model: opts.model,
      arch: model.summary.arch,
      backend: model.summary.backend,
      kv_cache: model.summary.kvCache,
      activation_bits: model.summary.activationBits,
      prefill_chunk: model.summary.prefillChunk,
      prefault: mapped?.state ?? 'off',
      prefault_ms: mapped ? seconds(t1, t1m) * 1e3 : 0,
      threads: model.summary.threads,
      top_k: model.summary.topK,
      prefill_path: model.summary.stream.prefillPath,
      decode_path: model.summary.stream.decodePath,
      io_mode: model.summary.stream.ioMode,
      prerouter: model.summary.stream.prerouter,
      prompt_tokens: opts.prompt,
      gen_tokens: opts.gen,
      load_ms: seconds(t0, t1) * 1e3,
      ttft_ms: seconds(t2, t3) * 1e3,
      prefill_tok_s: opts.prompt / seconds(t2, t3),
      decode_tok_s: decodeTokS,
      active_bytes_per_token: activeBytes,
      decode_read_gb_s: (activeBytes * decodeTokS) / 1e9,
      blocked_ms_per_token: st.blockedNs / 1e6 / gen,
      disk_read_bytes_per_token: diskBefore === null || diskAfter === null ? null : (diskAfter - diskBefore) / gen,
      expert_read_bytes_per_token: st.ioBytes / gen,
      read_hints_per_token: st.readHints / gen,
      warm_bytes_per_token: st.warmBytes / gen,
      warm_hit_rate: st.warmExperts > 0 ? st.warmHits / st.warmExperts : null,
      slot_hit_rate: lookups > 0 ? st.slotHits / lookups : null,
      prefetch_unused_bytes: st.prefetchUnusedBytes,
      prediction_recall: st.recallTotal > 0 ? st.recallHits / st.recallTotal : null,
      expert_buffer_bytes: info.stream.bufferBytes,
      weight_file_bytes: model.summary.fileBytes,
      kv_cache_bytes: info.stateBytes,
      rss_anon_bytes: mem.rssAnonBytes,
      rss_file_bytes: mem.rssFileBytes,
      peak_rss_bytes: mem.peakRssBytes,
      disk_read_bytes: read0 === null || read1 === null ? null : read1 - read0,
      mem_limit_bytes: null,
      auto,
      adapter,
      breakdown:
        before.profile && info.profile && opts.gen > 0
          ? decodeBreakdown(before.profile, info.profile, seconds(t3, t4))
          : null,
      prefill_breakdown:
        before.profile && opts.prompt > 0
          ? decodeBreakdown(start.profile ?? EMPTY_PROFILE, before.profile, seconds(t2, t3))
          : null,
    };
  } finally {
    model.dispose();
  }
}
