// Logits sources for engine tests: deterministic functions of the token prefix, so a session that
// reuses its cache must produce exactly what a cold session produces.
import { fileURLToPath } from 'node:url';
import type { LogitsSource } from '../../../daemon/engine/prefix-cache.js';
import { Prng } from '../../../robot/common/prng.js';

/** The hand-written byte-level BPE tokenizer with Qwen special tokens and a Qwen3-style template. */
export const FIXTURE = fileURLToPath(new URL('../../../../test/fixtures/tokenizer', import.meta.url));

/** A clock the fake sources advance by fixed costs per token. */
export class FakeClock {
  now = 0;
  read = (): number => this.now;
}

/** Counts engine calls and keeps the token list a real KV cache would hold. */
abstract class CountingSource implements LogitsSource {
  readonly calls = { prefill: 0, prefilledTokens: 0, decode: 0, truncate: 0 };
  protected tokens: number[] = [];

  constructor(
    readonly vocab: number,
    private readonly clock?: FakeClock,
    private readonly msPerPrefillToken = 1,
    private readonly msPerDecode = 10,
  ) {}

  get length(): number {
    return this.tokens.length;
  }

  async prefill(tokens: Int32Array): Promise<Float32Array> {
    this.calls.prefill++;
    this.calls.prefilledTokens += tokens.length;
    this.tokens.push(...tokens);
    if (this.clock) this.clock.now += tokens.length * this.msPerPrefillToken;
    return this.logits();
  }

  async decode(token: number): Promise<Float32Array> {
    this.calls.decode++;
    this.tokens.push(token);
    if (this.clock) this.clock.now += this.msPerDecode;
    return this.logits();
  }

  async truncate(n: number): Promise<void> {
    this.calls.truncate++;
    this.tokens.length = Math.min(n, this.tokens.length);
  }

  protected abstract logits(): Float32Array;
}

/** Logits = seeded normals from a hash of the whole prefix. */
export class HashLogitsSource extends CountingSource {
  constructor(
    vocab: number,
    private readonly scale = 4,
    clock?: FakeClock,
  ) {
    super(vocab, clock);
  }

  protected logits(): Float32Array {
    let h = 0x811c9dc5;
    for (const t of this.tokens) h = Math.imul(h ^ (t + 1), 0x01000193) >>> 0;
    const r = new Prng(h);
    const out = new Float32Array(this.vocab);
    for (let i = 0; i < out.length; i++) out[i] = r.normal() * this.scale;
    return out;
  }
}

/** HashLogitsSource that also decodes greedily in the "engine": the argmax below the vocabulary
 *  limit (lowest id on ties, as the native engine), the logits never handed over. */
export class GreedyHashSource extends HashLogitsSource {
  greedyCalls = 0;

  async decodeGreedy(token: number, vocabSize: number): Promise<number> {
    this.greedyCalls++;
    this.tokens.push(token);
    const l = this.logits().subarray(0, vocabSize);
    let best = -1;
    for (let i = 0; i < l.length; i++) if (l[i]! > (best < 0 ? -Infinity : l[best]!)) best = i;
    return best;
  }
}

/** Peaks at the next token of a script (after the prompt), so greedy decoding replays it. */
export class ScriptedLogitsSource extends CountingSource {
  private promptLength = -1;

  constructor(
    vocab: number,
    private readonly script: readonly number[],
    clock?: FakeClock,
  ) {
    super(vocab, clock);
  }

  override async prefill(tokens: Int32Array): Promise<Float32Array> {
    this.promptLength = this.tokens.length + tokens.length;
    return super.prefill(tokens);
  }

  protected logits(): Float32Array {
    const out = new Float32Array(this.vocab);
    const next = this.script[this.tokens.length - this.promptLength];
    if (next !== undefined) out[next] = 100;
    return out;
  }
}

/** Fresh seeded random logits on every call (a random-weight model): uniform with standard deviation `scale`. */
export class RandomLogitsSource extends CountingSource {
  private readonly prng: Prng;

  constructor(
    vocab: number,
    seed: number,
    private readonly scale = 3,
  ) {
    super(vocab);
    this.prng = new Prng(seed);
  }

  protected logits(): Float32Array {
    const out = new Float32Array(this.vocab);
    const k = (2 * Math.sqrt(3) * this.scale) / 2 ** 32;
    for (let i = 0; i < out.length; i++) out[i] = (this.prng.nextU32() - 2 ** 31) * k;
    return out;
  }
}
