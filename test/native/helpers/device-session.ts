// The device-session probes' output (test/native/session-probe.h: `--metal-session`,
// `--cuda-session`) and the checks every phase passes: greedy tokens identical to the CPU
// session's, the same cached length, on the device until the injected failure.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { repoRoot } from '../../../daemon/util/repo-root.js';

export type SessionDevice = 'metal' | 'cuda';

export type SessionPhase = { cpu: number[]; n_past: [number, number]; on_device: boolean } & Partial<
  Record<SessionDevice, number[]>
>;

export interface SessionProbe {
  device: string;
  phases: Record<string, SessionPhase>;
  prefix_hit_repeats_prompt: boolean;
  greedy_steps: number;
  /** The session's device memory after the prompt (KV cache and activations). */
  device_state_bytes: number;
  /** Decode layer-steps the CPU session routed by a prerouter prediction. */
  cpu_predicted_layers: number;
  /** A second session's decoder made no device copy of the weights again. */
  weights_shared: boolean;
  /** A greedy decode step's host synchronisations and bytes read back (CUDA emulation only). */
  greedy_step?: { syncs: number; d2h_bytes: number };
  greedy_step_counted?: { syncs: number; d2h_bytes: number };
  /** The injected failure turned the kernel set off (CUDA emulation only). */
  set_disabled?: boolean;
  /** A failure that left nothing to read back dropped the session's cache with an error, then the
   *  CPU ran it (CUDA emulation only). */
  sticky_failure_drops_cache?: boolean;
  /** K device slots per MoE layer (0: every expert resident) and the session's slot counters
   *  (session.h's StreamCounters; CUDA only). */
  expert_slots?: {
    k: number;
    experts: number;
    hits: number;
    misses: number;
    loads: number;
    prefetch_loads: number;
    io_bytes: number;
    predicted_layers: number;
  };
  max_rel_logit_diff: number;
  /** The same over the phases before the device failure. */
  max_rel_logit_diff_on_device: number;
  /** Streamed experts (Metal): the device session's counters before the failure, the CPU
   *  session's, and a decoder's host waits per append (a 4-token prefill chunk, 4 decode steps). */
  device_stream?: StreamCounts;
  cpu_stream?: StreamCounts;
  host_waits?: number[];
  /** A weight file shrunk under the streamed device session: the append failed with the reason,
   *  the session kept its length on the device and went on once the file was whole. */
  io_error?: {
    failed_with_reason: boolean;
    kept: boolean;
    continues: boolean;
    /** Hybrid models: the same under a truncation's replay (the session left at its snapshot). */
    replay?: {
      failed_with_reason: boolean;
      at_snapshot: boolean;
      continues: boolean;
      /** The same for a load failing at the replay's second MoE layer (fail_device_run). */
      midway: { failed_with_reason: boolean; at_snapshot: boolean; continues: boolean };
    };
  };
  /** [limit, CPU token, device token] of a greedy step over the ids below limit. */
  greedy_limit: [number, number, number];
}

/** Comma-separated: f16, zero | heads (a prerouter), staged (experts streamed through 6 slots;
 *  slots3: 3), direct (direct reads), slots (CUDA: a device budget of 3 experts per layer);
 *  'f32' alone: none. */
export type SessionMode = string;

/** The expert executor's counters (native StreamCounters). */
export interface StreamCounts {
  slot_hits: number;
  slot_misses: number;
  loads: number;
  prefetch_loads: number;
  prefetch_misses: number;
  io_bytes: number;
  fallbacks: number;
  drops: number;
}

export function sessionProbe(device: SessionDevice, dir: string, tokens: number, mode: SessionMode): SessionProbe {
  const binary = join(repoRoot, 'build', 'Release', 'brainstem-native-tests');
  const args = [`--${device}-session`, dir, String(tokens), ...(mode === 'f32' ? [] : [mode])];
  const r = spawnSync(binary, args, { encoding: 'utf8', timeout: 600_000 });
  assert.equal(r.status, 0, `${device} session probe failed:\n${r.stdout}\n${r.stderr}`);
  return JSON.parse(r.stdout) as SessionProbe;
}

/** The probes' random mode (session-probe.h): `calls` seeded prefills (images on multimodal-RoPE
 *  models), decode runs and truncations on the device session beside a CPU session. */
export interface RandomSession {
  seed: number;
  tokens: number;
  greedy_steps: number;
  greedy_mismatches: number;
  n_past: [number, number];
  on_device: boolean;
  max_rel_logit_diff: number;
  /** "p5" a prefill of 5 tokens, "i1:2x3:0" 1 token, a 2 × 3 image, none after it, "d33" 33
   *  decode steps, "t7" a truncation to 7 rows. */
  calls: string;
}

/** Runs the random mode and checks every call agreed: logits (f16 caches: 2e-3 of the largest,
 *  else 1e-4), greedy tokens, cached length, all on the device. */
export function checkRandomSession(
  device: SessionDevice,
  dir: string,
  calls: number,
  seed: number,
  mode = '',
): RandomSession {
  const p = sessionProbe(device, dir, calls, [`random=${seed}`, ...(mode ? [mode] : [])].join(',')) as unknown as {
    random: RandomSession;
  };
  const r = p.random;
  const at = `${device} ${mode || 'f32'} seed ${seed}: after ${r.calls}`;
  assert.equal(r.on_device, true, `${at}: on the device throughout`);
  assert.equal(r.n_past[1], r.n_past[0], `${at}: cached tokens`);
  assert.ok(r.greedy_steps > 0 && r.tokens > calls, `${at}: calls ran (${r.tokens} tokens)`);
  assert.equal(r.greedy_mismatches, 0, `${at}: greedy tokens`);
  const tol = mode.includes('f16') ? 2e-3 : 1e-4;
  assert.ok(r.max_rel_logit_diff < tol, `${at}: logits differ by ${r.max_rel_logit_diff} of the largest`);
  return r;
}

/** `tokens` greedy steps per phase; `shared`: also check that sessions share the weights;
 *  `replayed`: a hybrid model with a prerouter, whose state the host rebuilds after the failure
 *  by a replay that the router routes where decode steps took predictions (tokens and logits
 *  compared up to the failure). */
export function checkSessionPhases(
  device: SessionDevice,
  label: string,
  p: SessionProbe,
  moe: boolean,
  tokens: number,
  shared: boolean,
  replayed = false,
): void {
  const extra = ['long_decode', 'into_decode', 'image', 'after_image'].filter((n) => n in p.phases);
  const names = ['prompt', 'truncated', 'prefix_hit', ...(moe ? ['top_k'] : []), 'adapter', ...extra, 'handover'];
  assert.deepEqual(Object.keys(p.phases), names, `${label}: phases`);
  for (const name of names) {
    const ph = p.phases[name];
    // After a replayed hand-over the tokens may part ways, which ends the phase early.
    if (replayed && name === 'handover') assert.ok((ph[device]?.length ?? 0) >= 1, `${label} ${name}: steps ran`);
    else {
      assert.equal(ph[device]?.length, name === 'long_decode' ? 36 : tokens, `${label} ${name}: every step ran`);
      assert.deepEqual(ph[device], ph.cpu, `${label} ${name}: greedy tokens (${p.device})`);
    }
    assert.equal(ph.n_past[1], ph.n_past[0], `${label} ${name}: cached tokens`);
    assert.equal(ph.on_device, name !== 'handover', `${label} ${name}: runs on the device until the failure`);
  }
  assert.ok(p.prefix_hit_repeats_prompt, `${label}: a prefix hit continues as the same prompt did before`);
  assert.ok(p.greedy_steps > 0, `${label}: some steps brought back only the token`);
  const [limit, cpuToken, devToken] = p.greedy_limit;
  assert.ok(devToken === cpuToken && devToken >= 0 && devToken < limit, `${label}: greedy below ${limit}`);
  if (shared) assert.ok(p.weights_shared, `${label}: sessions share the weights`);
  // With an f16 cache a key that differs in its last float32 bits may round to the neighbouring
  // half (2^-11 of it): a few such ulps of the scale, against float32 rounding alone.
  const tol = label.includes('f16') ? 2e-3 : 1e-4;
  const diff = replayed ? p.max_rel_logit_diff_on_device : p.max_rel_logit_diff;
  assert.ok(diff < tol, `${label}: logits differ by ${diff} of the largest`);
}
