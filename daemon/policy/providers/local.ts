// The `local` provider: a model this daemon serves, called in-process through the same chat
// service as /v1/chat/completions and the `chat` RPC. tool_choice "required" makes the engine
// constrain the output to the tool schemas; the episode's prompt_cache_key keeps its session, so
// each decision prefills only the new turns (usage.prefilledTokens says how many).
import type { ChatOutcome, ChatService } from '../../engine/chat-service.js';
import { CancelledError } from '../../engine/request-queue.js';
import { RequestError } from '../../engine/request-error.js';
import type { PolicyTool } from '../tools.js';
import { decisionOf, toOpenAiMessages, toOpenAiTools } from './openai-format.js';
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
}

export class LocalProvider implements PolicyProvider {
  readonly name: string;
  private readonly clock: () => number;
  private calls = 0;

  constructor(private readonly o: LocalProviderOptions) {
    this.name = o.name ?? 'local';
    this.clock = o.clock ?? (() => performance.now());
  }

  /** The model's context and an exact counter (its chat template and tokenizer; images as their
   *  placeholder for text-only models, as one token per merged patch for vision models). */
  async promptBudget(signal: AbortSignal): Promise<PromptBudget> {
    const counter = await this.o.chat.promptCounter(this.o.model, signal).catch((e) => {
      throw this.failure(e);
    });
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
    const gen = this.o.chat.run({ body: this.body(req.messages, req.tools, req.limits), signal });
    let o: ChatOutcome;
    try {
      let step = await gen.next();
      while (!step.done) step = await gen.next();
      o = step.value;
    } catch (err) {
      throw signal.aborted ? new ProviderError(this.name, 'aborted', 'cancelled', { attempts: 1 }) : this.failure(err);
    } finally {
      await gen.return(undefined as never).catch(() => undefined);
    }
    const r = o.result;
    // The chat service ends a cancelled request with what it had: no decision comes of it.
    if (signal.aborted || r.finishReason === 'cancelled')
      throw new ProviderError(this.name, 'aborted', 'cancelled', { attempts: 1 });
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
        attempts: 1,
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

  private failure(err: unknown): ProviderError {
    if (err instanceof RequestError) return new ProviderError(this.name, 'request', err.message, { attempts: 1 });
    if (err instanceof CancelledError) return new ProviderError(this.name, 'aborted', err.message, { attempts: 1 });
    return new ProviderError(this.name, 'model', err instanceof Error ? err.message : String(err), { attempts: 1 });
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
