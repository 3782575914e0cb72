// The `local` provider: a model this daemon serves, called in-process through the same chat
// service as /v1/chat/completions and the `chat` RPC. tool_choice "required" makes the engine
// constrain the output to the tool schemas; the episode's prompt_cache_key keeps its session, so
// each decision prefills only the new turns (usage.prefilledTokens says how many).
import type { ChatOutcome, ChatService } from '../../engine/chat-service.js';
import { BusyError, CancelledError } from '../../engine/request-queue.js';
import { RequestError } from '../../engine/request-error.js';
import type { PolicyTool } from '../tools.js';
import { decisionOf, toOpenAiMessages, toOpenAiTools } from './openai-format.js';
import { DEFAULT_RETRY, type RetryOptions, retryDelay } from './retry.js';
import {
  type Decision,
  type DecisionLimits,
  type DecisionRequest,
  type PolicyMessage,
  type PolicyProvider,
  type PromptBudget,
  ProviderError,
} from './types.js';

export interface LocalProviderOptions {
  chat: ChatService;
  /** A configured model: `name` or `name:adapter`. */
  model: string;
  /** The server-side session to reuse across decisions (e.g. the episode id), so the prefix cache hits. */
  cacheKey?: string;
  /** Routing width K every decision runs at (default: the model's); the chat service checks it against the model. */
  expertsPerToken?: number;
  /** Provider name in decisions and errors (default 'local'). */
  name?: string;
  /** ms clock for timings (default performance.now). */
  clock?: () => number;
  /** Backoff while the model's queue is full (BusyError), as the openai provider's for 429
   *  (maxRetries, baseDelayMs, maxDelayMs, random, sleep; maxRetryAfterMs is unused). */
  retry?: Partial<RetryOptions>;
}

export class LocalProvider implements PolicyProvider {
  readonly name: string;
  private readonly clock: () => number;
  private readonly retry: RetryOptions;
  /** The episode (its cache key) is the client: one decision at a time, queued fairly against apps. */
  private readonly client: string;
  private calls = 0;

  constructor(private readonly o: LocalProviderOptions) {
    this.name = o.name ?? 'local';
    this.clock = o.clock ?? (() => performance.now());
    this.retry = { ...DEFAULT_RETRY, ...o.retry };
    this.client = `policy:${o.cacheKey ?? this.name}`;
  }

  /** The model's context and an exact counter (its chat template and tokenizer; images as their
   *  placeholder for text-only models, as one token per merged patch for vision models). */
  async promptBudget(signal: AbortSignal): Promise<PromptBudget> {
    const { value: counter } = await this.whenFree(signal, () =>
      this.o.chat.promptCounter(this.o.model, signal, this.client),
    );
    return {
      contextTokens: counter.contextLength,
      count: (messages, tools) => {
        try {
          return counter.count(this.body(messages, tools));
        } catch (e) {
          throw this.failure(e);
        }
      },
    };
  }

  async decide(req: DecisionRequest, signal: AbortSignal): Promise<Decision> {
    const started = this.clock();
    const body = this.body(req.messages, req.tools, req.limits);
    const { value: o, attempts } = await this.whenFree(signal, async (): Promise<ChatOutcome> => {
      const gen = this.o.chat.run({ body, signal, client: this.client });
      try {
        let step = await gen.next();
        while (!step.done) step = await gen.next();
        return step.value;
      } finally {
        await gen.return(undefined as never).catch(() => undefined);
      }
    });
    const r = o.result;
    // The chat service ends a cancelled request with what it had: no decision comes of it.
    if (signal.aborted) throw new ProviderError(this.name, 'aborted', 'cancelled', { attempts });
    if (r.finishReason === 'cancelled')
      throw new ProviderError(
        this.name,
        'model',
        'the model server cancelled the request (model unloaded or stopping)',
        {
          attempts,
        },
      );
    const bad = r.finishReason === 'error' && r.error;
    const reply = bad
      ? { content: r.error!.raw, toolCalls: [], finishReason: 'error', problem: r.error!.message }
      : {
          content: r.content,
          toolCalls: r.toolCalls.map((c) => ({
            id: this.newId(),
            name: c.name,
            arguments: JSON.stringify(c.arguments),
          })),
          finishReason: r.finishReason,
        };
    return decisionOf(
      { provider: this.name, model: this.o.model },
      reply,
      {
        promptTokens: r.usage.promptTokens,
        completionTokens: r.usage.completionTokens,
        cachedTokens: r.usage.cachedTokens,
        prefilledTokens: r.timings.prefillTokens,
      },
      {
        totalMs: this.clock() - started,
        attempts,
        queueMs: o.queuedMs + o.loadMs,
        prefillMs: r.timings.prefillMs,
        decodeMs: r.timings.decodeMs,
      },
      () => this.newId(),
    );
  }

  /** The chat-completions body the chat service reads (the same one /v1/chat/completions takes). */
  private body(messages: readonly PolicyMessage[], tools: readonly PolicyTool[], l: DecisionLimits = {}) {
    return {
      model: this.o.model,
      messages: toOpenAiMessages(messages, { images: this.takesImages() ? 'url' : 'text' }),
      tools: toOpenAiTools(tools),
      tool_choice: 'required',
      ...(this.o.cacheKey !== undefined ? { prompt_cache_key: this.o.cacheKey } : {}),
      ...(this.o.expertsPerToken !== undefined ? { experts_per_token: this.o.expertsPerToken } : {}),
      ...(l.maxTokens !== undefined ? { max_tokens: l.maxTokens } : {}),
      ...(l.temperature !== undefined ? { temperature: l.temperature } : {}),
      ...(l.seed !== undefined ? { seed: l.seed } : {}),
    };
  }

  /** Runs `call`, again after a backoff while the model's queue is full (chat traffic on the same
   *  model): busy is a wait, not the model failing. Other errors become ProviderErrors at once. */
  private async whenFree<T>(signal: AbortSignal, call: () => Promise<T>): Promise<{ value: T; attempts: number }> {
    for (let attempt = 1; ; attempt++) {
      try {
        return { value: await call(), attempts: attempt };
      } catch (err) {
        if (signal.aborted) throw new ProviderError(this.name, 'aborted', 'cancelled', { attempts: attempt });
        if (!(err instanceof BusyError)) throw this.failure(err, attempt);
        if (attempt > this.retry.maxRetries) {
          const tail = attempt > 1 ? ` (gave up after ${attempt} attempts)` : '';
          throw new ProviderError(this.name, 'busy', `${err.message}${tail}`, { attempts: attempt });
        }
      }
      try {
        await this.retry.sleep(retryDelay(attempt, undefined, this.retry), signal);
      } catch {
        throw new ProviderError(this.name, 'aborted', 'cancelled', { attempts: attempt });
      }
    }
  }

  private failure(err: unknown, attempts = 1): ProviderError {
    if (err instanceof RequestError) return new ProviderError(this.name, 'request', err.message, { attempts });
    if (err instanceof CancelledError) return new ProviderError(this.name, 'aborted', err.message, { attempts });
    return new ProviderError(this.name, 'model', err instanceof Error ? err.message : String(err), { attempts });
  }

  /** Whether the model has a vision tower (then observations and references go as images). */
  private takesImages(): boolean {
    try {
      return this.o.chat.inputsOf(this.o.model).includes('image');
    } catch {
      return false; // an unknown model fails in decide with the chat service's own error
    }
  }

  private newId(): string {
    return `call_policy_${++this.calls}`;
  }
}
