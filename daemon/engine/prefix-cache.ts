// Prompt-prefix reuse over an engine session: a prompt that extends the tokens already in the
// session's KV cache only prefills the new tokens; otherwise the cache is truncated to the common
// prefix first. Agent loops resend a growing context every step, so this turns O(n²) into O(n).
// Reuse is keyed by LoRA adapter and routing width K: keys and values depend on both (the adapter
// changes k/v_proj, K which experts every earlier layer adds), so a request with another adapter or
// K than the cache's starts from empty.

import type { MultimodalPrefill } from '../native/binding.js';
import { type PromptImages, sliceImages } from '../vision/splice.js';

/** A LoRA adapter as the prefix cache sees it: an identity that changes on every load. */
export interface AdapterRef {
  readonly id: string;
}

/** What the engine's session offers (the native engine implements it). */
export interface LogitsSource {
  /** Appends tokens to the KV cache (image rows given by `multimodal`); returns the logits after the last one. */
  prefill(tokens: Int32Array, multimodal?: MultimodalPrefill): Promise<Float32Array>;
  /** Appends one token; returns the logits after it. */
  decode(token: number): Promise<Float32Array>;
  /** Appends one token; returns the argmax of the logits after it among ids below `vocabSize`
   *  (lowest id on ties; -1 when none is finite), the logits left in the engine; absent: use decode. */
  decodeGreedy?(token: number, vocabSize: number): Promise<number>;
  /** Keeps the first n tokens of the KV cache. */
  truncate(n: number): Promise<void>;
  /** Tokens in the KV cache. */
  readonly length: number;
  /** Selects the adapter later calls run with (null: the base model); absent: no adapters. */
  setAdapter?(adapter: AdapterRef | null): void;
  /** Selects the routing width (experts per token) later calls run at (null: the model's); absent: fixed. */
  setTopK?(k: number | null): void;
}

export interface PrefixStats {
  /** Prompt tokens run through prefill, over the session's life. */
  prefilledTokens: number;
  /** Prompt tokens served from the cache instead. */
  reusedTokens: number;
  /** Generated tokens run through decode. */
  decodedTokens: number;
  /** Of those, tokens whose next greedy token came back without the logits (decodeGreedy). */
  greedyDecodes: number;
}

export interface PrefillResult {
  logits: Float32Array;
  reused: number;
  prefilled: number;
}

/** One request at a time: the caller (the model's queue) serialises use of a session. */
export class PrefixSession {
  readonly stats: PrefixStats = { prefilledTokens: 0, reusedTokens: 0, decodedTokens: 0, greedyDecodes: 0 };
  /** Mirror of the source's KV cache: token ids, and "<image hash>:<k>" for image rows. */
  private cached: (number | string)[] = [];
  /** Adapter the cached tokens were computed with (null: the base model). */
  private adapterRef: AdapterRef | null = null;
  /** Routing width the cached tokens were computed at (null: the model's). */
  private k: number | null = null;

  /** `prefillChunk`: tokens per prefill call, so cancellation can land between chunks (0 = all at once). */
  constructor(
    readonly source: LogitsSource,
    private readonly prefillChunk = 0,
  ) {}

  get tokens(): readonly (number | string)[] {
    return this.cached;
  }

  /** The adapter the cached tokens were computed with (null: the base model). */
  get adapter(): AdapterRef | null {
    return this.adapterRef;
  }

  /** The routing width the cached tokens were computed at (null: the model's). */
  get topK(): number | null {
    return this.k;
  }

  /**
   * Brings the cache to `prompt` run with `adapter` (null: the base model) at routing width `topK`
   * (null: the model's) and returns the logits after its last token. At least the last prompt token
   * is always prefilled (the cache keeps no logits). Another adapter or K than the cache's empties
   * the cache first. Returns undefined when
   * `signal` aborted between chunks; the cache then holds the prefix prefilled so far. With
   * `images`, their rows are prefilled with image embeddings and matched by image content.
   */
  async start(
    prompt: readonly number[],
    signal?: AbortSignal,
    adapter: AdapterRef | null = null,
    images?: PromptImages,
    topK: number | null = null,
  ): Promise<PrefillResult | undefined> {
    if (prompt.length === 0) throw new RangeError('the prompt has no tokens');
    const otherAdapter = (adapter?.id ?? null) !== (this.adapterRef?.id ?? null);
    if (otherAdapter || topK !== this.k) {
      if (otherAdapter) {
        if (!this.source.setAdapter) throw new RangeError('this engine session cannot run LoRA adapters');
        this.source.setAdapter(adapter);
        this.adapterRef = adapter;
      }
      if (topK !== this.k) {
        if (!this.source.setTopK) throw new RangeError('this engine session cannot change its routing width');
        this.source.setTopK(topK);
        this.k = topK;
      }
      this.cached = [];
      if (this.source.length !== 0) await this.guard(() => this.source.truncate(0));
    }
    // Someone else moved the source (or a call failed): trust nothing in it.
    if (this.source.length !== this.cached.length) this.cached = [];
    const keys = images?.keys ?? prompt;
    let keep = 0;
    const limit = Math.min(this.cached.length, prompt.length - 1);
    while (keep < limit && this.cached[keep] === keys[keep]) keep++;
    if (this.source.length !== keep) await this.guard(() => this.source.truncate(keep));
    this.cached.length = keep;
    this.stats.reusedTokens += keep;
    const chunk = this.prefillChunk > 0 ? this.prefillChunk : prompt.length;
    // A call ends after the last new image row too: a hybrid model snapshots its recurrent state at
    // each call's end, so a follow-up about the same image replays only the text after it.
    const rows = images?.rows ?? [];
    const cut = rows.length > 0 && rows[rows.length - 1]! >= keep ? rows[rows.length - 1]! + 1 : -1;
    let logits: Float32Array | undefined;
    for (let at = keep, end = at; at < prompt.length; at = end) {
      if (signal?.aborted) return undefined;
      end = Math.min(prompt.length, at + chunk);
      if (cut > at && cut < end) end = cut;
      const part = Int32Array.from(prompt.slice(at, end));
      logits = await this.guard(() => this.source.prefill(part, images && sliceImages(images, at, end)));
      this.cached.push(...keys.slice(at, end));
      this.stats.prefilledTokens += part.length;
    }
    return { logits: logits!, reused: keep, prefilled: prompt.length - keep };
  }

  async decode(token: number): Promise<Float32Array> {
    const logits = await this.guard(() => this.source.decode(token));
    this.cached.push(token);
    this.stats.decodedTokens++;
    return logits;
  }

  /** Whether decodeGreedy runs in the engine (otherwise it is not offered). */
  get canDecodeGreedy(): boolean {
    return this.source.decodeGreedy !== undefined;
  }

  /** As decode, but only the greedy token comes back (see LogitsSource.decodeGreedy). */
  async decodeGreedy(token: number, vocabSize: number): Promise<number> {
    const source = this.source;
    if (!source.decodeGreedy) throw new RangeError('this engine session cannot decode greedily without logits');
    const next = await this.guard(() => source.decodeGreedy!(token, vocabSize));
    this.cached.push(token);
    this.stats.decodedTokens++;
    this.stats.greedyDecodes++;
    return next;
  }

  /** Forgets the cache (the next start prefills everything). */
  async reset(): Promise<void> {
    await this.guard(() => this.source.truncate(0));
    this.cached = [];
  }

  private async guard<T>(op: () => Promise<T>): Promise<T> {
    try {
      return await op();
    } catch (e) {
      this.cached = [];
      throw e;
    }
  }
}
