// `bench decode` with arms: each run is its own process (fresh RSS and page-cache accounting),
// optionally inside a memory-limited cgroup (page cache counted) and after dropping the model
// files' cached pages; the arms alternate (ABAB, then BABA) over the rounds and each arm
// reports medians. A run the OOM killer ends is counted, not fatal.
import { spawn } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadNative } from '../native/binding.js';
import { createMemoryCgroup, type MemoryCgroup } from '../util/cgroup.js';
import type { BenchProfile, DecodeBenchOptions, DecodeBenchResult } from './decode-bench.js';

export interface ArmsOptions {
  base: Omit<DecodeBenchOptions, keyof BenchProfile>;
  arms: BenchProfile[];
  rounds: number;
  memLimitBytes?: number;
  cold: boolean;
  /** Progress lines (stderr). */
  log?: (line: string) => void;
}

export interface RunOutcome {
  code: number | null;
  signal: string | null;
  stdout: string;
  stderr: string;
}

export type SpawnRun = (argv: string[]) => Promise<RunOutcome>;

const MEDIAN_KEYS = [
  'decode_tok_s',
  'prefill_tok_s',
  'ttft_ms',
  'load_ms',
  'blocked_ms_per_token',
  'disk_read_bytes_per_token',
  'expert_read_bytes_per_token',
  'read_hints_per_token',
  'warm_bytes_per_token',
  'warm_hit_rate',
  'slot_hit_rate',
  'prefetch_unused_bytes',
  'prediction_recall',
  'active_bytes_per_token',
  'rss_anon_bytes',
  'rss_file_bytes',
  'peak_rss_bytes',
  'expert_buffer_bytes',
  'disk_read_bytes',
] as const;
type MedianKey = (typeof MEDIAN_KEYS)[number];

export interface ArmSummary extends Partial<Record<MedianKey, number | null>> {
  arm: string;
  profile: BenchProfile;
  runs: number;
  killed: number;
  /** Peak memory of the cgroup (page cache included) over the arm's runs. */
  cgroup_peak_bytes: number | null;
  samples: { decode_tok_s: number[]; blocked_ms_per_token: number[] };
  errors: string[];
  /** A load option the engine refused in a run (every run then fails alike). */
  refused?: { option: string; detail: string };
}

export interface ArmsResult extends Partial<Record<MedianKey, number | null>> {
  model: string;
  threads: number;
  prompt_tokens: number;
  gen_tokens: number;
  rounds: number;
  cold: boolean;
  mem_limit_bytes: number | null;
  cgroup: string | null;
  mem_limit_note: string | null;
  arms: ArmSummary[];
  comparison: { arm: string; vs: string; decode_speedup: number | null; blocked_ratio: number | null }[];
}

export function armLabel(p: BenchProfile): string {
  const parts = [
    `decode ${p.decodePath ?? 'auto'}`,
    `prefill ${p.prefillPath ?? 'auto'}`,
    `prerouter ${p.prerouter ?? 'off'}`,
  ];
  if (p.topK) parts.push(`k ${p.topK}`);
  if (p.ioMode) parts.push(p.ioMode);
  return parts.join(', ');
}

export function median(xs: number[]): number | null {
  if (xs.length === 0) return null;
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

const spawnNode: SpawnRun = (argv) =>
  new Promise((resolve) => {
    const child = spawn(argv[0]!, argv.slice(1), { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.once('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
  });

/** The worker's failure line (its last line on stderr), or the whole stderr when that is not one. */
function workerFailure(stderr: string): { error?: string; option?: string; detail?: string } {
  const text = stderr.trim();
  try {
    const f = JSON.parse(text.split('\n').pop()!) as { error?: unknown };
    if (typeof f?.error === 'string') return f as { error: string };
  } catch {
    // not the worker's line (it died before writing one)
  }
  return text ? { error: text } : {};
}

function modelFiles(dir: string, prerouter: string | undefined): string[] {
  const files = readdirSync(dir)
    .filter((f) => f.endsWith('.safetensors'))
    .map((f) => join(dir, f));
  if (prerouter && prerouter !== 'on' && prerouter !== 'off') files.push(prerouter);
  return files;
}

export async function runArms(o: ArmsOptions, spawnRun: SpawnRun = spawnNode): Promise<ArmsResult> {
  const worker = join(dirname(fileURLToPath(import.meta.url)), 'decode-bench-worker.js');
  let cgroup: MemoryCgroup | undefined;
  let note: string | null = null;
  if (o.memLimitBytes !== undefined) {
    const r = createMemoryCgroup(o.memLimitBytes, `brainstem-bench-${process.pid}`);
    cgroup = r.cgroup;
    if (!cgroup) {
      note = `no memory limit applied: ${r.reason}`;
      o.log?.(note);
    }
  }
  const summaries: ArmSummary[] = o.arms.map((p) => ({
    arm: armLabel(p),
    profile: p,
    runs: 0,
    killed: 0,
    cgroup_peak_bytes: null,
    samples: { decode_tok_s: [], blocked_ms_per_token: [] },
    errors: [],
  }));
  const results: DecodeBenchResult[][] = o.arms.map(() => []);
  try {
    for (let round = 0; round < o.rounds; round++) {
      const order = o.arms.map((_, i) => i);
      if (round % 2 === 1) order.reverse();
      for (const i of order) {
        const profile = o.arms[i]!;
        const s = summaries[i]!;
        if (o.cold) await loadNative().dropPageCache(modelFiles(o.base.model, profile.prerouter));
        cgroup?.resetPeak();
        const kills = cgroup?.oomKills() ?? 0;
        const argv = [process.execPath, worker, JSON.stringify({ ...o.base, ...profile })];
        o.log?.(`round ${round + 1}/${o.rounds}: ${s.arm}`);
        const out = await spawnRun(cgroup ? cgroup.wrap(argv) : argv);
        s.runs++;
        const peak = cgroup?.peakBytes() ?? null;
        if (peak !== null) s.cgroup_peak_bytes = Math.max(s.cgroup_peak_bytes ?? 0, peak);
        const oom = (cgroup?.oomKills() ?? 0) > kills;
        if (out.code === 0) {
          const r = JSON.parse(out.stdout.trim().split('\n').pop()!) as DecodeBenchResult;
          results[i]!.push(r);
          s.samples.decode_tok_s.push(r.decode_tok_s);
          s.samples.blocked_ms_per_token.push(r.blocked_ms_per_token);
        } else if (out.signal === 'SIGKILL' || oom) {
          s.killed++;
          s.errors.push(`killed${oom ? ' by the OOM killer' : ` (${out.signal})`}`);
        } else {
          const f = workerFailure(out.stderr);
          s.errors.push(f.error ?? `exit ${out.code ?? out.signal}`);
          if (f.option && f.detail) s.refused = { option: f.option, detail: f.detail };
        }
      }
    }
  } finally {
    cgroup?.remove();
  }
  for (const [i, s] of summaries.entries()) {
    for (const k of MEDIAN_KEYS) {
      const xs = results[i]!.map((r) => r[k]).filter((v): v is number => typeof v === 'number');
      s[k] = median(xs);
    }
  }
  const first = summaries[0]!;
  return {
    ...Object.fromEntries(MEDIAN_KEYS.map((k) => [k, first[k] ?? null])),
    model: o.base.model,
    threads: o.base.threads,
    prompt_tokens: o.base.prompt,
    gen_tokens: o.base.gen,
    rounds: o.rounds,
    cold: o.cold,
    mem_limit_bytes: cgroup ? cgroup.limitBytes : null,
    cgroup: cgroup ? `v${cgroup.version} ${cgroup.path}` : null,
    mem_limit_note: note,
    arms: summaries,
    comparison: summaries.slice(1).map((s) => ({
      arm: s.arm,
      vs: first.arm,
      decode_speedup: s.decode_tok_s && first.decode_tok_s ? s.decode_tok_s / first.decode_tok_s : null,
      blocked_ratio:
        s.blocked_ms_per_token != null && first.blocked_ms_per_token
          ? s.blocked_ms_per_token / first.blocked_ms_per_token
          : null,
    })),
  };
}
