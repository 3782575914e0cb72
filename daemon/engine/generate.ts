// The token loop: prefill (reusing the session's cached prefix), then sample → detokenise →
// stop checks → decode, streaming text deltas as an async iterator. Cancellation via AbortSignal
// is checked around every engine call; timings use an injected clock.
import type { StreamDecoder } from './detokenizer.js';
import type { AdapterRef, PrefixSession } from './prefix-cache.js';
import type { PromptImages } from '../vision/splice.js';
import { RequestError } from './request-error.js';
import { type Sampler, noFiniteLogit } from './sampler.js';
import { StopStringMatcher } from './stop-strings.js';

/** Restricts which tokens may come next (constrained decoding). */
export interface TokenConstraint {
  /** Sets forbidden logits to -Infinity; `remaining` = tokens left including this one. */
  mask(logits: Float32Array, remaining: number): void;
  accept(token: number): void;
  /** Fewest tokens that complete the output. */
  readonly minTokens: number;
}

export interface GenerateOptions {
  prompt: readonly number[];
  maxTokens: number;
  sampler: Sampler;
  detokenizer: StreamDecoder;
  /** Sampling one of these ends the output; the token adds no text. */
  stopTokens: ReadonlySet<number>;
  stopStrings?: readonly string[];
  /** Logits entries at or beyond this id are never sampled (model vocab padding). */
  vocabSize: number;
  constraint?: TokenConstraint;
  /** The prompt's image rows (multimodal models), spliced by splicePrompt. */
  images?: PromptImages;
  /** LoRA adapter to run with (default: the base model); the session's cache is keyed by it. */
  adapter?: AdapterRef | null;
  /** Routing width (experts per token; default null: the model's); the session's cache is keyed by it. */
  topK?: number | null;
  signal?: AbortSignal;
  /** Milliseconds; inject a fake in tests. */
  clock?: () => number;
  /** When the request arrived (clock ms), so time to first token includes templating. */
  startedAt?: number;
}

export type FinishReason = 'stop' | 'length' | 'cancelled';

export interface Usage {
  promptTokens: number;
  completionTokens: number;
  /** Prompt tokens served from the session's cache. */
  cachedTokens: number;
}

export interface Timings {
  prefillTokens: number;
  prefillMs: number;
  prefillTokensPerSecond: number;
  decodeTokens: number;
  decodeMs: number;
  decodeTokensPerSecond: number;
  timeToFirstTokenMs: number;
  totalMs: number;
}

export interface GenerationResult {
  text: string;
  tokens: number[];
  finishReason: FinishReason;
  /** The stop string that ended the output, if one did. */
  stopString?: string;
  usage: Usage;
  timings: Timings;
}

export async function* generate(session: PrefixSession, o: GenerateOptions): AsyncGenerator<string, GenerationResult> {
  const clock = o.clock ?? (() => performance.now());
  const t0 = o.startedAt ?? clock();
  if (!Number.isInteger(o.maxTokens) || o.maxTokens < 1)
    throw new RequestError('max_tokens', 'range', `must be a positive integer, got ${o.maxTokens}`);
  if (o.constraint && o.maxTokens < o.constraint.minTokens) {
    throw new RequestError(
      'max_tokens',
      'range',
      `the constrained output needs at least ${o.constraint.minTokens} tokens, got ${o.maxTokens}`,
    );
  }
  const stops = new StopStringMatcher(o.constraint ? [] : (o.stopStrings ?? []));
  const tokens: number[] = [];
  let text = '';
  let finishReason: FinishReason = 'length';
  let stopString: string | undefined;
  let firstTokenAt: number | undefined;
  let decodeTokens = 0;

  const tPrefill = clock();
  const first = o.signal?.aborted
    ? undefined
    : await session.start(o.prompt, o.signal, o.adapter ?? null, o.images, o.topK ?? null);
  const tPrefillEnd = clock();
  o.sampler.prime(o.prompt);
  // Greedy with nothing to mask: decode steps bring back only the argmax, the logits stay native.
  const greedy = !o.constraint && o.sampler.greedy && session.canDecodeGreedy;
  // The logits to sample from, or the token a greedy decode step already chose.
  let next: Float32Array | number | undefined = first?.logits;
  while (next !== undefined) {
    if (o.signal?.aborted) break;
    const token = typeof next === 'number' ? next : pick(next, o, o.maxTokens - tokens.length);
    tokens.push(token);
    firstTokenAt ??= clock();
    o.constraint?.accept(token);
    if (o.stopTokens.has(token)) {
      finishReason = 'stop';
      break;
    }
    o.sampler.accept(token);
    const out = stops.push(o.detokenizer.push(token));
    if (out.text) {
      text += out.text;
      yield out.text;
    }
    if (out.stop !== undefined) {
      finishReason = 'stop';
      stopString = out.stop;
      break;
    }
    if (tokens.length >= o.maxTokens || o.signal?.aborted) break;
    if (greedy) {
      next = await session.decodeGreedy(token, o.vocabSize);
      if (next < 0) throw noFiniteLogit();
    } else {
      next = await session.decode(token);
    }
    decodeTokens++;
  }
  if (o.signal?.aborted && finishReason !== 'stop') finishReason = 'cancelled';
  if (stopString === undefined) {
    const tail = stops.push(o.detokenizer.flush()).text + stops.flush();
    if (tail) {
      text += tail;
      yield tail;
    }
  }
  const end = clock();
  const prefillMs = tPrefillEnd - tPrefill;
  const decodeMs = firstTokenAt === undefined ? 0 : end - firstTokenAt;
  const prefilled = first?.prefilled ?? 0;
  return {
    text,
    tokens,
    finishReason,
    stopString,
    usage: { promptTokens: o.prompt.length, completionTokens: tokens.length, cachedTokens: first?.reused ?? 0 },
    timings: {
      prefillTokens: prefilled,
      prefillMs,
      prefillTokensPerSecond: rate(prefilled, prefillMs),
      decodeTokens,
      decodeMs,
      decodeTokensPerSecond: rate(decodeTokens, decodeMs),
      timeToFirstTokenMs: firstTokenAt === undefined ? 0 : firstTokenAt - t0,
      totalMs: end - t0,
    },
  };
}

function pick(logits: Float32Array, o: GenerateOptions, remaining: number): number {
  const work = logits.slice(0, Math.min(logits.length, o.vocabSize));
  o.constraint?.mask(work, remaining);
  return o.sampler.sample(work, o.vocabSize);
}

function rate(n: number, ms: number): number {
  return ms > 0 ? (n * 1000) / ms : 0;
}
