// The `openai` provider: any OpenAI-compatible /v1/chat/completions (a hosted model, vLLM,
// llama-server, another brainstem). One non-streamed request per decision with the tools and
// tool_choice "required"; images as data URLs; retries on 429, 5xx, timeouts and dropped
// connections with backoff (Retry-After first), never on another 4xx.
import { isRecord } from '../../../robot/common/validation/values.js';
import { decisionOf, type Reply, toOpenAiMessages, toOpenAiTools } from './openai-format.js';
import { DEFAULT_RETRY, type RetryOptions, retryAfterMs, retryDelay, retryableStatus } from './retry.js';
import {
  type Decision,
  type DecisionRequest,
  type DecisionUsage,
  type PolicyProvider,
  type PromptBudget,
  ProviderError,
  type RawToolCall,
} from './types.js';

export interface OpenAiProviderOptions {
  /** The API root up to and including /v1, e.g. https://api.openai.com/v1 or http://127.0.0.1:8080/v1. */
  baseUrl: string;
  model: string;
  /** Name of the environment variable holding the API key (sent as a Bearer token); absent: no key. */
  apiKeyEnv?: string;
  /** Where apiKeyEnv is read (default process.env). */
  env?: Readonly<Record<string, string | undefined>>;
  /** Longest wait for one answer, ms (default 120 000). */
  timeoutMs?: number;
  retry?: Partial<RetryOptions>;
  /** 'text' for a text-only model: images become placeholders (default 'url'). */
  images?: 'url' | 'text';
  /** The model's context in tokens, for the history policy (servers do not report it). */
  contextTokens?: number;
  /** Provider name in decisions and errors (default 'openai'). */
  name?: string;
  /** ms clock for timings (default performance.now). */
  clock?: () => number;
  fetch?: typeof fetch;
}

/** A failed attempt with `retry` may succeed when asked again (after the server's Retry-After, if it gave one). */
type Attempt = { ok: true; decision: Decision } | { ok: false; error: ProviderError; retry?: { afterMs?: number } };

export class OpenAiProvider implements PolicyProvider {
  readonly name: string;
  private readonly url: string;
  private readonly headers: Record<string, string>;
  private readonly retry: RetryOptions;
  private readonly clock: () => number;
  private readonly fetch: typeof fetch;
  private calls = 0;

  constructor(private readonly o: OpenAiProviderOptions) {
    this.name = o.name ?? 'openai';
    const protocol = URL.canParse(o.baseUrl) ? new URL(o.baseUrl).protocol : '';
    if (protocol !== 'http:' && protocol !== 'https:')
      throw new ProviderError(
        this.name,
        'request',
        `baseUrl: must be an http(s) URL, got ${JSON.stringify(o.baseUrl)}`,
      );
    this.url = `${o.baseUrl.replace(/\/+$/, '')}/chat/completions`;
    this.headers = { 'content-type': 'application/json' };
    if (o.apiKeyEnv !== undefined) {
      const key = (o.env ?? process.env)[o.apiKeyEnv];
      if (!key)
        throw new ProviderError(this.name, 'request', `apiKeyEnv: the environment variable ${o.apiKeyEnv} is not set`);
      this.headers.authorization = `Bearer ${key}`;
    }
    this.retry = { ...DEFAULT_RETRY, ...o.retry };
    this.clock = o.clock ?? (() => performance.now());
    this.fetch = o.fetch ?? fetch;
  }

  async promptBudget(): Promise<PromptBudget> {
    return this.o.contextTokens === undefined ? {} : { contextTokens: this.o.contextTokens };
  }

  async decide(req: DecisionRequest, signal: AbortSignal): Promise<Decision> {
    const started = this.clock();
    const l = req.limits ?? {};
    const body = JSON.stringify({
      model: this.o.model,
      messages: toOpenAiMessages(req.messages, { images: this.o.images ?? 'url' }),
      tools: toOpenAiTools(req.tools),
      tool_choice: 'required',
      stream: false,
      ...(l.maxTokens !== undefined ? { max_tokens: l.maxTokens } : {}),
      ...(l.temperature !== undefined ? { temperature: l.temperature } : {}),
      ...(l.seed !== undefined ? { seed: l.seed } : {}),
    });
    for (let attempt = 1; ; attempt++) {
      const r = await this.attempt(body, signal, started, attempt);
      if (r.ok) return r.decision;
      if (!r.retry || attempt > this.retry.maxRetries) throw this.final(r.error, attempt, r.retry !== undefined);
      const wait = retryDelay(attempt, r.retry.afterMs, this.retry);
      if (wait > this.retry.maxRetryAfterMs) {
        const why = `${r.error.reason}; the server asks to wait ${wait} ms, more than maxRetryAfterMs ${this.retry.maxRetryAfterMs}`;
        throw this.final(new ProviderError(this.name, 'http', why, r.error.details), attempt, false);
      }
      try {
        await this.retry.sleep(wait, signal);
      } catch {
        throw this.aborted(attempt);
      }
    }
  }

  /** One request and its answer. */
  private async attempt(body: string, signal: AbortSignal, started: number, attempt: number): Promise<Attempt> {
    if (signal.aborted) throw this.aborted(attempt - 1);
    const timeoutMs = this.o.timeoutMs ?? 120_000;
    const timer = new AbortController();
    const t = setTimeout(() => timer.abort(), timeoutMs);
    let res: Response;
    let text: string;
    try {
      res = await this.fetch(this.url, {
        method: 'POST',
        headers: this.headers,
        body,
        signal: AbortSignal.any([signal, timer.signal]),
      });
      text = await res.text();
    } catch (err) {
      if (signal.aborted) throw this.aborted(attempt);
      const error = timer.signal.aborted
        ? new ProviderError(this.name, 'timeout', `POST ${this.url}: no answer within ${timeoutMs} ms`)
        : new ProviderError(this.name, 'network', `POST ${this.url}: ${causeOf(err)}`);
      return { ok: false, error, retry: {} };
    } finally {
      clearTimeout(t);
    }
    const json = parseJson(text);
    if (res.ok) return { ok: true, decision: this.decision(json, started, attempt) };
    const err = isRecord(json) && isRecord(json.error) ? json.error : {};
    // brainstem answers output that failed its own tool-call check this way: a decision, not a failure.
    if (err.type === 'model_output_error' && typeof err.raw === 'string')
      return {
        ok: true,
        decision: decisionOf(
          this.head(),
          { content: err.raw, toolCalls: [], finishReason: 'error', problem: String(err.message ?? '') },
          { promptTokens: 0, completionTokens: 0 },
          { totalMs: this.clock() - started, attempts: attempt },
          () => this.newId(),
        ),
      };
    const what = typeof err.message === 'string' ? err.message : text.slice(0, 200);
    const error = new ProviderError(this.name, 'http', `POST ${this.url}: HTTP ${res.status}: ${what}`, {
      status: res.status,
    });
    if (!retryableStatus(res.status, res.headers)) return { ok: false, error };
    const afterMs = retryAfterMs(res.headers.get('retry-after'), Date.now());
    return { ok: false, error, retry: afterMs === undefined ? {} : { afterMs } };
  }

  private decision(json: unknown, started: number, attempts: number): Decision {
    const choice = isRecord(json) && Array.isArray(json.choices) ? json.choices[0] : undefined;
    if (!isRecord(choice) || !isRecord(choice.message))
      throw new ProviderError(this.name, 'http', `POST ${this.url}: the answer has no choices[0].message`, {
        attempts,
      });
    const m = choice.message;
    const calls = Array.isArray(m.tool_calls) ? m.tool_calls : [];
    const reply: Reply = {
      content: typeof m.content === 'string' ? m.content : '',
      toolCalls: calls.map((c) => this.rawCall(c)),
      finishReason: typeof choice.finish_reason === 'string' ? choice.finish_reason : 'unknown',
    };
    const timings = isRecord(json) && isRecord(json.timings) ? json.timings : {};
    const num = (v: unknown) => (typeof v === 'number' ? v : undefined);
    return decisionOf(
      this.head(),
      reply,
      usageOf(json),
      {
        totalMs: this.clock() - started,
        attempts,
        ...(num(timings.queue_ms) !== undefined ? { queueMs: num(timings.queue_ms) } : {}),
        ...(num(timings.prefill_ms) !== undefined ? { prefillMs: num(timings.prefill_ms) } : {}),
        ...(num(timings.decode_ms) !== undefined ? { decodeMs: num(timings.decode_ms) } : {}),
      },
      () => this.newId(),
    );
  }

  private rawCall(c: unknown): RawToolCall {
    const f = isRecord(c) && isRecord(c.function) ? c.function : {};
    const args = f.arguments;
    return {
      id: isRecord(c) && typeof c.id === 'string' ? c.id : this.newId(),
      name: typeof f.name === 'string' ? f.name : '',
      arguments: typeof args === 'string' ? args : args === undefined ? '' : JSON.stringify(args),
    };
  }

  private head() {
    return { provider: this.name, model: this.o.model };
  }

  private newId(): string {
    return `call_policy_${++this.calls}`;
  }

  private aborted(attempts: number): ProviderError {
    return new ProviderError(this.name, 'aborted', `POST ${this.url}: cancelled`, { attempts });
  }

  private final(e: ProviderError, attempts: number, retried: boolean): ProviderError {
    const tail = retried ? ` (gave up after ${attempts} attempts)` : '';
    return new ProviderError(this.name, e.kind, `${e.reason}${tail}`, {
      ...e.details,
      attempts,
    });
  }
}

function usageOf(json: unknown): DecisionUsage {
  const u = isRecord(json) && isRecord(json.usage) ? json.usage : {};
  const n = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? v : 0);
  const usage: DecisionUsage = { promptTokens: n(u.prompt_tokens), completionTokens: n(u.completion_tokens) };
  const cached = isRecord(u.prompt_tokens_details) ? u.prompt_tokens_details.cached_tokens : undefined;
  if (typeof cached === 'number') {
    usage.cachedTokens = cached;
    usage.prefilledTokens = usage.promptTokens - cached;
  }
  return usage;
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function causeOf(err: unknown): string {
  const e = err as Error & { cause?: { code?: string; message?: string } };
  return e.cause?.code ?? e.cause?.message ?? e.message;
}
