// One chat completion end to end, for both APIs: pick the model ("name" or "name:adapter"), wait
// for its turn (loading it if needed), parse the body against it, pick the session whose cache
// the prompt extends, run the chat, record metrics, release (applying the request's keep_alive).
// HTTP and WebSocket only translate its events and outcome.
import { randomBytes } from 'node:crypto';
import { parseDuration } from '../util/duration.js';
import { selectAdapter } from './adapters/select.js';
import { type ChatEvent, type ChatResult, chatPrompt, chatPromptAsync, checkContext, runChat } from './chat.js';
import { parseChatRequest, preflightChatBody } from './chat-request.js';
import { showValue } from '../../robot/common/validation/values.js';
import { CancelledError } from './request-queue.js';
import { RequestError, numberField } from './request-error.js';
import { EngineError } from './native-model.js';
import type { LoadProgress, ModelRegistry } from './model-registry.js';
import type { ServingMetrics } from './serving-metrics.js';
import { splicePrompt } from '../vision/splice.js';
import { DEFAULT_VISION } from '../vision/config.js';
import type { RequestImage, VisionRuntime } from '../vision/vision-runtime.js';

/**
 * Encodes the request's images (bad ones → 400) and splices them into the rendered prompt. The
 * prompt's size is checked first from the images' headers, so an over-long request runs no tower,
 * and an aborted request (client gone) stops between images.
 */
export async function spliceImages(
  vision: VisionRuntime,
  rendered: number[],
  images: RequestImage[],
  o: { contextLength: number; signal?: AbortSignal },
) {
  checkContext(
    images.reduce((n, img) => n + vision.tokensFor(img) - 1, rendered.length),
    o.contextLength,
  );
  const encoded = [];
  for (const img of images) {
    if (o.signal?.aborted) throw new CancelledError();
    encoded.push(await vision.encode(img));
  }
  return splicePrompt(rendered, encoded, vision.ids, vision.tower.preprocessor.mergeSize);
}

/** A model as requests name it: `name`, or `name:adapter` for a LoRA adapter of that model. */
export interface ModelRef {
  name: string;
  adapter?: string;
}

export function parseModelRef(raw: unknown, names: readonly string[]): ModelRef {
  if ((raw === undefined || raw === null || raw === '') && names.length === 1) return { name: names[0]! };
  if (typeof raw !== 'string' || raw === '')
    throw new RequestError(
      'model',
      'required',
      `must name a model (one of ${names.join(', ') || 'none configured'}), got ${showValue(raw)}`,
    );
  const at = raw.indexOf(':');
  if (at < 0) return { name: raw };
  const adapter = raw.slice(at + 1);
  if (adapter === '')
    throw new RequestError('model', 'adapter', `"name:adapter" needs an adapter name after ":", got ${showValue(raw)}`);
  return { name: raw.slice(0, at), adapter };
}

/** The request's keep_alive in ms (-1 = never), or undefined to keep the model's. */
export function parseKeepAlive(raw: unknown): number | undefined {
  if (raw === undefined || raw === null) return undefined;
  const d = parseDuration(raw);
  if ('rule' in d) throw new RequestError('keep_alive', 'duration', `${d.rule}, got ${showValue(raw)}`);
  return d.ms;
}

/**
 * The request's `experts_per_token` (routing width K, 1..the model's K) as a session key: null for
 * the model's own K (absent, or equal to it), so such requests share cached prefixes. Named apart
 * from `top_k`, which the body already takes for sampling.
 */
export function parseExpertsPerToken(raw: unknown, modelK: number | undefined, model: string): number | null {
  if (raw === undefined || raw === null) return null;
  if (!modelK)
    throw new RequestError('experts_per_token', 'moe', `model "${model}" routes no experts, got ${showValue(raw)}`);
  const k = numberField(raw, 'experts_per_token', 1, modelK, { integer: true })!;
  return k === modelK ? null : k;
}

export interface ChatCall {
  /** The OpenAI chat-completions body (plus keep_alive, prompt_cache_key, adapter, experts_per_token). */
  body: Record<string, unknown>;
  signal?: AbortSignal;
  /** Load progress while this request waits for its model. */
  onProgress?: (p: LoadProgress) => void;
  /** The completion id (streams send it before the outcome exists); default a fresh one. */
  id?: string;
  /** Who asks, for the model queue's per-client limit and round-robin (an HTTP or WebSocket
   *  connection, a policy episode); absent: one shared anonymous client. */
  client?: string;
}

export interface ChatOutcome {
  id: string;
  /** Unix seconds. */
  created: number;
  /** The model as the request named it. */
  model: string;
  result: ChatResult;
  queuedMs: number;
  loadMs: number;
}

export const newId = (prefix: string): string => `${prefix}${randomBytes(12).toString('base64url')}`;

export class ChatService {
  constructor(
    private readonly registry: ModelRegistry,
    private readonly metrics: ServingMetrics,
    private readonly clock: () => number = () => performance.now(),
  ) {}

  /** Aborted when the daemon stops serving models. */
  get stopping(): AbortSignal {
    return this.registry.stoppingSignal;
  }

  /** The model name replies carry: as the request gave it, or the only configured model. */
  modelName(raw: unknown): string {
    if (typeof raw === 'string' && raw !== '') return raw;
    const names = this.registry.names();
    return names.length === 1 ? names[0]! : '';
  }

  /** What the named model's folder takes (['text'] or ['text', 'image']), without loading it. */
  inputsOf(model: unknown): string[] {
    return this.registry.statusOf(parseModelRef(model, this.registry.names()).name).inputs;
  }

  /** Counts a chat body's prompt tokens exactly as run() renders them (template, tools, tokenizer) for
   *  the model the body names, and tells that model's context; the lease is held only to read the model. */
  async promptCounter(
    model: unknown,
    signal?: AbortSignal,
    client?: string,
  ): Promise<{ contextLength: number; count(body: Record<string, unknown>): number }> {
    const ref = parseModelRef(model, this.registry.names());
    const lease = await this.registry.lease(ref.name, { signal, client });
    const { text, contextLength } = lease.model;
    lease.release();
    const { vision } = lease.model;
    return {
      contextLength,
      // Each image's one placeholder becomes one token per merged patch (sized from its header).
      count: (body) => {
        const req = parseChatRequest(body, text, vision);
        return req.images.reduce((n, img) => n + vision!.tokensFor(img) - 1, chatPrompt(text, req).length);
      },
    };
  }

  async *run(call: ChatCall): AsyncGenerator<ChatEvent, ChatOutcome> {
    const arrivedAt = this.clock();
    const created = Math.floor(Date.now() / 1000);
    const id = call.id ?? newId('chatcmpl-');
    const { body } = call;
    const ref = parseModelRef(body.model, this.registry.names());
    const keepAlive = parseKeepAlive(body.keep_alive);
    const key = body.prompt_cache_key;
    if (key !== undefined && key !== null && typeof key !== 'string')
      throw new RequestError('prompt_cache_key', 'type', `must be a string, got ${showValue(key)}`);
    // A malformed body (bad images too) is refused before it queues or loads a model.
    const shape = preflightChatBody(body, this.registry.imageLimitsOf(ref.name) ?? DEFAULT_VISION.limits);
    const lease = await this.registry.lease(ref.name, {
      signal: call.signal,
      onProgress: call.onProgress,
      client: call.client,
    });
    let outcome = 'failed';
    try {
      let adapter = selectAdapter(lease.model.adapters, ref, body.adapter);
      const topK = parseExpertsPerToken(body.experts_per_token, lease.model.summary?.topK, ref.name);
      const vision = lease.model.vision;
      const req = parseChatRequest(body, lease.model.text, vision, shape);
      const rendered = await chatPromptAsync(lease.model.text, req);
      const spliced =
        vision && (req.images.length > 0 || rendered.includes(vision.ids.image))
          ? await spliceImages(vision, rendered, req.images, {
              contextLength: lease.model.contextLength,
              signal: lease.signal,
            })
          : undefined;
      const prompt = spliced?.prompt ?? rendered;
      const session = await lease.sessions.take(spliced?.images.keys ?? prompt, key ?? undefined, adapter, topK);
      const streamBefore = session.engine.streamStats?.();
      let result: ChatResult;
      try {
        // adapters.unload may have come during the awaits since the choice (it does not wait for the
        // queue): answer as for a request that came after it, not with the engine's refusal.
        if (adapter?.isDisposed) adapter = selectAdapter(lease.model.adapters, ref, body.adapter);
        result = yield* runChat(lease.model.text, session.session, req, {
          constraints: lease.model.constraints,
          signal: lease.signal,
          clock: this.clock,
          contextLength: lease.model.contextLength,
          prompt,
          startedAt: arrivedAt,
          adapter,
          topK,
          ...(spliced ? { images: spliced.images } : {}),
        });
      } finally {
        // The lease keeps the session alive until release, so its counters can still be read.
        if (streamBefore) this.metrics.stream.record(ref.name, streamBefore, session.engine.streamStats!());
        session.release();
      }
      outcome = result.finishReason;
      // Cut off by the daemon stopping, not by the client: an error, not a short answer.
      if (result.finishReason === 'cancelled' && !call.signal?.aborted)
        throw new CancelledError('the daemon is stopping');
      this.metrics.recordGeneration(ref.name, result.usage, result.timings, result.usage.completionTokens > 0);
      return { id, created, model: this.modelName(body.model), result, queuedMs: lease.queuedMs, loadMs: lease.loadMs };
    } catch (err) {
      if (err instanceof RequestError) outcome = 'invalid';
      // A fault of the model (a corrupt expert, NaN logits) names it: it is not the client's.
      if (err instanceof EngineError) throw new EngineError(`model "${ref.name}": ${err.message}`);
      throw err;
    } finally {
      // Also reached when the consumer stops iterating (client gone).
      if (outcome === 'failed' && call.signal?.aborted) outcome = 'cancelled';
      this.metrics.requests.inc({ model: ref.name, outcome });
      lease.release(keepAlive);
    }
  }
}
