// Token sampling: penalties, temperature, top-k, top-p, min-p and a seeded draw (same seed and
// logits → same tokens). Order follows Hugging Face's warpers: penalties → temperature → top-k →
// top-p → min-p; temperature 0 is greedy (lowest id wins ties).
import { randomInt } from 'node:crypto';
import { Prng } from '../util/prng.js';
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
  temperature: 1, topK: 0, topP: 1, minP: 0, repetitionPenalty: 1, repeatLastN: 64, frequencyPenalty: 0, presencePenalty: 0,
};

/** Request fields (OpenAI / llama.cpp names) over defaults; throws RequestError naming a bad field. */
export function resolveSampling(req: Record<string, unknown>, defaults: Partial<SamplingParams> = {}, vocabSize = Number.MAX_SAFE_INTEGER): SamplingParams {
  const d = { ...DEFAULT_SAMPLING, ...defaults };
  const seed = numberField(req.seed, 'seed', Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER, { integer: true });
  const logitBias = parseLogitBias(req.logit_bias, vocabSize);
  return {
    ...(logitBias ? { logitBias } : {}),
    temperature: numberField(req.temperature, 'temperature', 0, 100) ?? d.temperature,
    topK: numberField(req.top_k, 'top_k', 0, 1e9, { integer: true }) ?? d.topK,
    topP: numberField(req.top_p, 'top_p', 0, 1) ?? d.topP,
    minP: numberField(req.min_p, 'min_p', 0, 1) ?? d.minP,
    repetitionPenalty: numberField(req.repetition_penalty ?? req.repeat_penalty, 'repetition_penalty', 0.01, 100) ?? d.repetitionPenalty,
    repeatLastN: numberField(req.repeat_last_n, 'repeat_last_n', -1, 1e9, { integer: true }) ?? d.repeatLastN,
    frequencyPenalty: numberField(req.frequency_penalty, 'frequency_penalty', -2, 2) ?? d.frequencyPenalty,
    presencePenalty: numberField(req.presence_penalty, 'presence_penalty', -2, 2) ?? d.presencePenalty,
    seed: seed ?? defaults.seed ?? randomInt(0, 2 ** 32),
  };
}

function parseLogitBias(raw: unknown, vocabSize: number): Map<number, number> | undefined {
  if (raw === undefined || raw === null) return undefined;
  if (typeof raw !== 'object' || Array.isArray(raw)) throw new RequestError('logit_bias', 'type', `must be an object of token id → bias, got ${JSON.stringify(raw)}`);
  const out = new Map<number, number>();
  for (const [k, v] of Object.entries(raw)) {
    const id = /^\d+$/.test(k) ? Number(k) : NaN;
    if (!(id < vocabSize)) throw new RequestError(`logit_bias.${k}`, 'token', `keys must be token ids below ${vocabSize}`);
    const bias = numberField(v, `logit_bias.${k}`, -100, 100);
    if (bias === undefined) throw new RequestError(`logit_bias.${k}`, 'type', 'must be a number in [-100, 100], got null');
    out.set(id, bias);
  }
  return out;
}

/** A sparse distribution: ids with their probabilities (sum 1), most likely first unless unfiltered. */
export interface Distribution {
  ids: Int32Array;
  probs: Float64Array;
}

export class Sampler {
  private readonly prng: Prng;
  /** Recent prompt+output tokens (for repetitionPenalty) and output-only counts. */
  private readonly recent: number[] = [];
  private readonly recentCounts = new Map<number, number>();
  private readonly outputCounts = new Map<number, number>();

  /** `exempt`: tokens never penalised (stop tokens: a prompt full of <|im_end|> must not discourage ending). */
  constructor(readonly params: SamplingParams, private readonly exempt: ReadonlySet<number> = new Set()) {
    // Seeds beyond 32 bits fold into the generator's 32-bit seed.
    this.prng = new Prng(Number(BigInt.asUintN(32, BigInt(params.seed))));
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
    const d = this.distribution(logits, vocabSize);
    let u = this.prng.next();
    for (let k = 0; k < d.ids.length; k++) {
      u -= d.probs[k];
      if (u < 0) return d.ids[k];
    }
    return d.ids[d.ids.length - 1];
  }

  /** The distribution `sample` draws from, after penalties and every filter. */
  distribution(logits: Float32Array, vocabSize = logits.length): Distribution {
    const p = this.params;
    const l = logits.slice(0, Math.min(vocabSize, logits.length));
    this.applyPenalties(l);
    let max = -Infinity;
    let argmax = -1;
    for (let i = 0; i < l.length; i++) {
      if (l[i] > max) {
        max = l[i];
        argmax = i;
      }
    }
    if (argmax < 0 || max === Infinity) throw new RequestError('logits', 'finite', 'no token has a finite logit to sample from');
    if (p.temperature === 0 || p.topK === 1) return { ids: Int32Array.of(argmax), probs: Float64Array.of(1) };
    // z = (logit - max) / T, so the top token has weight exp(0) = 1.
    const z = new Float64Array(l.length);
    for (let i = 0; i < l.length; i++) z[i] = (l[i] - max) / p.temperature;
    if (p.topK === 0 && p.topP >= 1 && p.minP === 0) return normalise(finiteIds(z), z);
    return normalise(this.filter(z), z);
  }

  private filter(z: Float64Array): Int32Array {
    const p = this.params;
    const heap = new MaxHeap(z);
    const kept: number[] = [];
    let mass: number;
    if (p.topK > 0) {
      mass = 0;
      while (kept.length < p.topK && heap.size > 0) {
        const id = heap.pop();
        kept.push(id);
        mass += Math.exp(z[id]);
      }
    } else {
      mass = 0;
      for (let i = 0; i < z.length; i++) mass += Math.exp(z[i]);
    }
    let out: number[] = [];
    if (p.topP >= 1) out = p.topK > 0 ? kept : Array.from(finiteIds(z));
    let cum = 0;
    for (let k = 0; p.topP < 1; k++) {
      const id = k < kept.length ? kept[k] : p.topK === 0 && heap.size > 0 ? heap.pop() : -1;
      if (id < 0) break;
      out.push(id);
      cum += Math.exp(z[id]) / mass;
      if (cum >= p.topP) break;
    }
    // min-p: p_i / p_max = exp(z_i - z_max) and z_max = 0.
    const floor = p.minP > 0 ? Math.log(p.minP) : -Infinity;
    return Int32Array.from(out.filter((id) => z[id] >= floor));
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

function finiteIds(z: Float64Array): Int32Array {
  const ids: number[] = [];
  for (let i = 0; i < z.length; i++) if (z[i] > -Infinity) ids.push(i);
  return Int32Array.from(ids);
}

function normalise(ids: Int32Array, z: Float64Array): Distribution {
  const probs = new Float64Array(ids.length);
  let sum = 0;
  for (let k = 0; k < ids.length; k++) sum += probs[k] = Math.exp(z[ids[k]]);
  for (let k = 0; k < ids.length; k++) probs[k] /= sum;
  return { ids, probs };
}

// Max-heap of token ids by z (ties: lower id first); built in O(n), so top-k/top-p only pay
// log n per token they keep instead of sorting the whole vocabulary.
class MaxHeap {
  private readonly a: Int32Array;
  size: number;

  constructor(private readonly z: Float64Array) {
    const ids = finiteIds(z);
    this.a = ids;
    this.size = ids.length;
    for (let i = (this.size >> 1) - 1; i >= 0; i--) this.down(i);
  }

  pop(): number {
    const top = this.a[0];
    this.a[0] = this.a[--this.size];
    this.down(0);
    return top;
  }

  private before(i: number, j: number): boolean {
    const zi = this.z[this.a[i]];
    const zj = this.z[this.a[j]];
    return zi > zj || (zi === zj && this.a[i] < this.a[j]);
  }

  private down(i: number): void {
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < this.size && this.before(l, m)) m = l;
      if (r < this.size && this.before(r, m)) m = r;
      if (m === i) return;
      const t = this.a[i];
      this.a[i] = this.a[m];
      this.a[m] = t;
      i = m;
    }
  }
}
