// Token sampling: penalties, temperature, top-k, top-p, min-p and a seeded draw (same seed and
// logits → same tokens). Order follows Hugging Face's warpers: penalties → temperature → top-k →
// top-p → min-p; temperature 0 is greedy (lowest id wins ties).
import { randomInt } from 'node:crypto';
import { loadNative } from '../native/binding.js';
import { Prng } from '../../robot/common/prng.js';
import { EngineError } from './native-model.js';
import { RequestError, numberField } from './request-error.js';

export interface SamplingParams {
  /** 0 = greedy. */
  temperature: number;
  /** Keep the k most likely tokens; 0 = off. */
  topK: number;
  /** Keep the smallest set whose probability reaches p; 1 = off. */
  topP: number;
  /** Drop tokens below minP × the top probability; 0 = off. */
  minP: number;
  /** llama.cpp/CTRL: logits of recent tokens divided (if > 0) or multiplied by this; 1 = off. */
  repetitionPenalty: number;
  /** Tokens of prompt + output that repetitionPenalty looks at; -1 = all. */
  repeatLastN: number;
  /** OpenAI: logit -= frequencyPenalty × count in the output so far. */
  frequencyPenalty: number;
  /** OpenAI: logit -= presencePenalty if the token occurs in the output so far. */
  presencePenalty: number;
  seed: number;
  /** OpenAI logit_bias: token id → value added to its logit (-100 bans it, 100 all but forces it). */
  logitBias?: ReadonlyMap<number, number>;
}

export const DEFAULT_SAMPLING: Omit<SamplingParams, 'seed'> = {
  temperature: 1,
  topK: 0,
  topP: 1,
  minP: 0,
  repetitionPenalty: 1,
  repeatLastN: 64,
  frequencyPenalty: 0,
  presencePenalty: 0,
};

/** Request fields (OpenAI / llama.cpp names) over defaults; throws RequestError naming a bad field. */
export function resolveSampling(
  req: Record<string, unknown>,
  defaults: Partial<SamplingParams> = {},
  vocabSize = Number.MAX_SAFE_INTEGER,
): SamplingParams {
  const d = { ...DEFAULT_SAMPLING, ...defaults };
  const seed = numberField(req.seed, 'seed', Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER, { integer: true });
  const logitBias = parseLogitBias(req.logit_bias, vocabSize);
  return {
    ...(logitBias ? { logitBias } : {}),
    temperature: numberField(req.temperature, 'temperature', 0, 100) ?? d.temperature,
    topK: numberField(req.top_k, 'top_k', 0, 1e9, { integer: true }) ?? d.topK,
    topP: numberField(req.top_p, 'top_p', 0, 1) ?? d.topP,
    minP: numberField(req.min_p, 'min_p', 0, 1) ?? d.minP,
    repetitionPenalty:
      numberField(req.repetition_penalty ?? req.repeat_penalty, 'repetition_penalty', 0.01, 100) ?? d.repetitionPenalty,
    repeatLastN: numberField(req.repeat_last_n, 'repeat_last_n', -1, 1e9, { integer: true }) ?? d.repeatLastN,
    frequencyPenalty: numberField(req.frequency_penalty, 'frequency_penalty', -2, 2) ?? d.frequencyPenalty,
    presencePenalty: numberField(req.presence_penalty, 'presence_penalty', -2, 2) ?? d.presencePenalty,
    seed: seed ?? defaults.seed ?? randomInt(0, 2 ** 32),
  };
}

function parseLogitBias(raw: unknown, vocabSize: number): Map<number, number> | undefined {
  if (raw === undefined || raw === null) return undefined;
  if (typeof raw !== 'object' || Array.isArray(raw))
    throw new RequestError('logit_bias', 'type', `must be an object of token id → bias, got ${JSON.stringify(raw)}`);
  const out = new Map<number, number>();
  for (const [k, v] of Object.entries(raw)) {
    const id = /^\d+$/.test(k) ? Number(k) : NaN;
    if (!(id < vocabSize))
      throw new RequestError(`logit_bias.${k}`, 'token', `keys must be token ids below ${vocabSize}`);
    const bias = numberField(v, `logit_bias.${k}`, -100, 100);
    if (bias === undefined)
      throw new RequestError(`logit_bias.${k}`, 'type', 'must be a number in [-100, 100], got null');
    out.set(id, bias);
  }
  return out;
}

/** The request cannot cause this (biases are bounded): the model's weights or activations are not finite. */
export function noFiniteLogit(): EngineError {
  return new EngineError('no token has a finite logit to sample from (NaN or ±Inf logits: the model is faulty)');
}

/**
 * A sparse distribution: ids with their probabilities (sum 1). Unfiltered: id order; top-k: most
 * likely first; top-p alone: the tokens well inside the nucleus in id order, then the rest most
 * likely first.
 */
export interface Distribution {
  ids: Int32Array;
  probs: Float64Array;
}

interface Weights {
  ids: Int32Array | null;
  w: Float64Array;
  total: number;
  /** The penalised logits. */
  l: Float32Array;
}

export class Sampler {
  private readonly prng: Prng;
  /** Recent prompt+output tokens (for repetitionPenalty) and output-only counts. */
  private readonly recent: number[] = [];
  private readonly recentCounts = new Map<number, number>();
  private readonly outputCounts = new Map<number, number>();
  /** Weights exp(z), reused across tokens (a vocabulary of float64s per token is GC churn). */
  private e = new Float64Array(0);

  /** `exempt`: tokens never penalised (stop tokens: a prompt full of <|im_end|> must not discourage ending). */
  constructor(
    readonly params: SamplingParams,
    private readonly exempt: ReadonlySet<number> = new Set(),
  ) {
    // Seeds beyond 32 bits fold into the generator's 32-bit seed.
    this.prng = new Prng(Number(BigInt.asUintN(32, BigInt(params.seed))));
  }

  /** Whether every token is the argmax of the raw logits (greedy; no bias or penalty changes
   *  them), so the engine can pick it without handing the logits over. */
  get greedy(): boolean {
    const p = this.params;
    return (
      (p.temperature === 0 || p.topK === 1) &&
      p.repetitionPenalty === 1 &&
      p.frequencyPenalty === 0 &&
      p.presencePenalty === 0 &&
      !p.logitBias?.size
    );
  }

  /** Feeds prompt tokens (penalty window only). */
  prime(prompt: readonly number[]): void {
    const n = this.params.repeatLastN;
    for (const t of n < 0 ? prompt : prompt.slice(Math.max(0, prompt.length - n))) this.remember(t);
  }

  /** Records a sampled output token. */
  accept(token: number): void {
    this.remember(token);
    this.outputCounts.set(token, (this.outputCounts.get(token) ?? 0) + 1);
  }

  /** Draws a token from `logits` (entries at or beyond `vocabSize` are never drawn). */
  sample(logits: Float32Array, vocabSize = logits.length): number {
    const d = this.weights(logits, vocabSize);
    // Unfiltered, the weights are the whole vocabulary in id order: drawn without building
    // id and probability lists (two more passes and 2 MB of fresh arrays per token).
    const n = d.ids ? d.ids.length : d.w.length;
    const id = (k: number): number => (d.ids ? d.ids[k]! : k);
    let u = this.prng.next() * d.total;
    let last = -1;
    for (let k = 0; k < n; k++) {
      if (d.w[k]! > 0) last = k;
      u -= d.w[k]!;
      if (u < 0) return id(k);
    }
    return id(last < 0 ? n - 1 : last); // rounding left u ≥ 0: the last token that has weight
  }

  /** The distribution `sample` draws from, after penalties and every filter. */
  distribution(logits: Float32Array, vocabSize = logits.length): Distribution {
    const d = this.weights(logits, vocabSize);
    const ids = d.ids ?? finiteIds(d.l);
    const probs = new Float64Array(ids.length);
    let sum = 0;
    for (let k = 0; k < ids.length; k++) sum += probs[k] = d.ids ? d.w[k]! : d.w[ids[k]!]!;
    for (let k = 0; k < ids.length; k++) probs[k]! /= sum;
    return { ids, probs };
  }

  /**
   * Unnormalised weights after penalties and every filter: `ids` with weights `w`, or (`ids`
   * null) every token in id order, weight w[id]; total = Σ w in that order.
   */
  private weights(logits: Float32Array, vocabSize: number): Weights {
    const p = this.params;
    const l = logits.slice(0, Math.min(vocabSize, logits.length));
    this.applyPenalties(l);
    // The passes over the whole vocabulary run natively: in JavaScript the argmax costs ~0.6 ms
    // and the exponentials ~4 ms per token (a moe-small decode step is ~25 ms).
    const native = loadNative();
    const argmax = native.argmax(l);
    const max = argmax < 0 ? -Infinity : l[argmax]!;
    if (argmax < 0 || max === Infinity) throw noFiniteLogit();
    if (p.temperature === 0 || p.topK === 1) return { ids: Int32Array.of(argmax), w: Float64Array.of(1), total: 1, l };
    // e = exp(z), z = (logit - max) / T: the top token has weight exp(0) = 1. Token order by z is
    // the order by logit, so comparisons read l.
    const z = (id: number): number => (l[id]! - max) / p.temperature;
    if (this.e.length < l.length) this.e = new Float64Array(l.length);
    const e = this.e.subarray(0, l.length);
    // Candidates most likely first (ties: lower id): the top k, or for top-p alone the few
    // tokens whose mass can reach p; never a sort of the whole vocabulary.
    let kept: Int32Array;
    let mass = 0;
    if (p.topK > 0) {
      kept = topK(l, p.topK); // only the kept tokens need their weight
      for (const id of kept) mass += e[id] = Math.exp(z(id));
    } else {
      mass = native.expShifted(l, max, p.temperature, e);
      if (p.topP >= 1 && p.minP === 0) return { ids: null, w: e, total: mass, l };
      kept = p.topP < 1 ? nucleusCandidates(l, e, max, p.temperature, p.topP * mass) : finiteIds(l);
    }
    // The kept prefix of the candidates (typed arrays throughout: the nucleus of a flat
    // distribution is ~100k tokens).
    let ids = kept;
    if (p.topP < 1) {
      let cum = 0,
        end = 0;
      for (;;) {
        // Rounding can leave the nucleus short of p inside the candidates: the rest follow in
        // order (the candidates are exactly the top tokens, so the walk goes on at `end`).
        if (end === ids.length && p.topK === 0 && ids.length < countFinite(l)) ids = sortedIds(l, finiteIds(l));
        if (end >= ids.length) break;
        cum += e[ids[end++]!]! / mass;
        if (cum >= p.topP) break;
      }
      ids = ids.subarray(0, end);
    }
    // min-p: p_i / p_max = exp(z_i - z_max) and z_max = 0.
    if (p.minP > 0) {
      const floor = Math.log(p.minP);
      ids = ids.filter((id) => z(id) >= floor);
    }
    const w = new Float64Array(ids.length);
    let sum = 0;
    for (let k = 0; k < ids.length; k++) sum += w[k] = e[ids[k]!]!;
    return { ids, w, total: sum, l };
  }

  private applyPenalties(l: Float32Array): void {
    const p = this.params;
    for (const [t, bias] of p.logitBias ?? []) if (t < l.length) l[t] += bias;
    if (p.repetitionPenalty !== 1) {
      for (const t of this.recentCounts.keys()) {
        if (t >= l.length || this.exempt.has(t)) continue;
        l[t] = l[t] > 0 ? l[t] / p.repetitionPenalty : l[t] * p.repetitionPenalty;
      }
    }
    if (p.frequencyPenalty !== 0 || p.presencePenalty !== 0) {
      for (const [t, n] of this.outputCounts) {
        if (t >= l.length || this.exempt.has(t)) continue;
        l[t] -= p.frequencyPenalty * n + p.presencePenalty;
      }
    }
  }

  private remember(token: number): void {
    const n = this.params.repeatLastN;
    if (n === 0) return;
    this.recent.push(token);
    this.recentCounts.set(token, (this.recentCounts.get(token) ?? 0) + 1);
    if (n > 0 && this.recent.length > n) {
      const old = this.recent.shift()!;
      const c = this.recentCounts.get(old)! - 1;
      if (c === 0) this.recentCounts.delete(old);
      else this.recentCounts.set(old, c);
    }
  }
}

function countFinite(l: Float32Array): number {
  let n = 0;
  for (let i = 0; i < l.length; i++) if (l[i]! > -Infinity) n++;
  return n;
}

function finiteIds(l: Float32Array): Int32Array {
  const ids = new Int32Array(countFinite(l));
  for (let i = 0, k = 0; i < l.length; i++) if (l[i]! > -Infinity) ids[k++] = i;
  return ids;
}

/** ids by logit descending, lower id first on ties. */
function sortedIds(l: Float32Array, ids: Int32Array): Int32Array {
  return ids.sort((a, b) => l[b]! - l[a]! || a - b);
}

/** The k finite ids of largest logit, sorted: one pass with a size-k min-heap (ids arrive in increasing order, so an equal logit never displaces). */
function topK(l: Float32Array, k: number): Int32Array {
  const heap = new Int32Array(Math.min(k, l.length));
  let size = 0;
  // The root is the worst kept: smallest logit, higher id on ties.
  const worse = (a: number, b: number): boolean =>
    l[heap[a]!]! < l[heap[b]!]! || (l[heap[a]!] === l[heap[b]!] && heap[a]! > heap[b]!);
  const down = (i: number): void => {
    for (;;) {
      const c = 2 * i + 1;
      let m = i;
      if (c < size && worse(c, m)) m = c;
      if (c + 1 < size && worse(c + 1, m)) m = c + 1;
      if (m === i) return;
      const t = heap[i]!;
      heap[i] = heap[m]!;
      heap[m] = t;
      i = m;
    }
  };
  for (let i = 0; i < l.length; i++) {
    const v = l[i]!;
    if (!(v > -Infinity)) continue;
    if (size < heap.length) {
      heap[size++] = i;
      if (size === heap.length) for (let j = (size >> 1) - 1; j >= 0; j--) down(j);
    } else if (v > l[heap[0]!]!) {
      heap[0] = i;
      down(0);
    }
  }
  return sortedIds(l, heap.subarray(0, size));
}

/**
 * The top-p candidates: weights e summed per bucket of z = (logit - max) / T of width 1/8 below
 * the maximum (z = 0) find the bucket b where the running mass crosses `need` (= top_p × mass).
 * Tokens above bucket b - 1 hold less than `need` between them, so all are in the nucleus
 * whatever their order: they come first, in id order; then buckets b - 1 .. b + 1 sorted by
 * logit, in which the walk stops. Only those are sorted (a flat distribution has ~100k tokens
 * in its nucleus).
 */
function nucleusCandidates(
  l: Float32Array,
  e: Float64Array,
  max: number,
  temperature: number,
  need: number,
): Int32Array {
  const W = 8,
    NB = 8 * 64;
  const z = (i: number): number => (l[i]! - max) / temperature;
  const bucketMass = new Float64Array(NB);
  for (let i = 0; i < l.length; i++) {
    const zi = z(i);
    if (zi > -Infinity) bucketMass[Math.min(NB - 1, Math.floor(-zi * W))]! += e[i]!;
  }
  let b = 0;
  for (let run = 0; b < NB; b++) {
    run += bucketMass[b]!;
    if (run >= need) break;
  }
  const sure = -(b - 1) / W,
    cut = b + 1 >= NB - 1 ? -Infinity : -(b + 2) / W;
  let nSure = 0,
    n = 0;
  for (let i = 0; i < l.length; i++) {
    const zi = z(i);
    if (zi > sure) nSure++;
    else if (zi > cut) n++;
  }
  const ids = new Int32Array(nSure + n);
  for (let i = 0, a = 0, c = nSure; i < l.length; i++) {
    const zi = z(i);
    if (zi > sure) ids[a++] = i;
    else if (zi > cut) ids[c++] = i;
  }
  sortedIds(l, ids.subarray(nSure));
  return ids;
}
