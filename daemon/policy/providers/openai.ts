// The `openai` provider: any OpenAI-compatible /v1/chat/completions (a hosted model, vLLM,
// llama-server, another brainstem). One non-streamed request per decision with the tools and
// tool_choice "required"; images as data URLs; retries on 429, 5xx, timeouts and dropped
// connections with backoff (Retry-After first), never on another 4xx, a redirect (never followed:
// it would re-post the prompt elsewhere) or an answer over the byte cap (read no further).
import { isRecord } from '../../../robot/common/validation/values.js';
import { estimateTokens } from '../tokens.js';
import { DEFAULT_MAX_RESPONSE_BYTES, readBounded, showBytes } from './bounded-body.js';
import { decisionOf, type Reply, rawText, toOpenAiMessages, toOpenAiTools } from './openai-format.js';
import { baseUrlProblem, fetchFailure, redactUrl } from './provider-url.js';
import { reportedUsage } from './reported-usage.js';
import { DEFAULT_RETRY, type RetryOptions, retryAfterMs, retryDelay, retryableStatus } from './retry.js';
import {
  type Decision,
  type DecisionRequest,
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
  /** Largest answer body read, bytes (default 16 MiB): past it the request fails, not retried. */
  maxResponseBytes?: number;
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

/** Which attempt of which decision: its start, number and the prompt's estimate (for missing usage). */
interface At {
  started: number;
  attempt: number;
  prompt: () => number;
}

/** A failed attempt with `retry` may succeed when asked again (after the server's Retry-After, if it gave one). */
type Attempt = { ok: true; decision: Decision } | { ok: false; error: ProviderError; retry?: { afterMs?: number } };

export class OpenAiProvider implements PolicyProvider {
  readonly name: string;
  private readonly url: string;
  /** The URL as messages show it (no credentials or query). */
  private readonly shown: string;
  private readonly headers: Record<string, string>;
  private readonly retry: RetryOptions;
  private readonly clock: () => number;
  private readonly fetch: typeof fetch;
  private calls = 0;

  constructor(private readonly o: OpenAiProviderOptions) {
    this.name = o.name ?? 'openai';
    const problem = baseUrlProblem(o.baseUrl);
    if (problem)
      throw new ProviderError(this.name, 'request', `baseUrl: ${problem}, got ${JSON.stringify(redactUrl(o.baseUrl))}`);
    this.url = `${o.baseUrl.replace(/\/+$/, '')}/chat/completions`;
    this.shown = redactUrl(this.url);
    this.headers = { 'content-type': 'application/json' };
    if (o.apiKeyEnv !== undefined) {
      const key = (o.env ?? process.env)[o.apiKeyEnv];
      if (!key)
        throw new ProviderError(this.name, 'request', `apiKeyEnv: the environment variable ${o.apiKeyEnv} is not set`);
      // fetch would refuse it at every decision, quoting the key in its message.
      if (!validHeader(`Bearer ${key}`))
        throw new ProviderError(
          this.name,
          'request',
          `apiKeyEnv: the value of ${o.apiKeyEnv} cannot be sent in a header (a line break or a non-Latin-1 character?)`,
        );
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
    // For a server that reports no usage: estimated once, when needed.
    let promptTokens: number | undefined;
    const prompt = () => (promptTokens ??= estimateTokens(req.messages, req.tools));
    for (let attempt = 1; ; attempt++) {
      const r = await this.attempt(body, signal, { started, attempt, prompt });
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
  private async attempt(body: string, signal: AbortSignal, at: At): Promise<Attempt> {
    const { started, attempt } = at;
    if (signal.aborted) throw this.aborted(attempt - 1);
    const timeoutMs = this.o.timeoutMs ?? 120_000;
    const cap = this.o.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
    const timer = new AbortController();
    const t = setTimeout(() => timer.abort(), timeoutMs);
    let res: Response;
    let read: Awaited<ReturnType<typeof readBounded>>;
    try {
      res = await this.fetch(this.url, {
        method: 'POST',
        headers: this.headers,
        body,
        // Followed, a redirect would re-post the prompt to wherever the server points.
        redirect: 'manual',
        signal: AbortSignal.any([signal, timer.signal]),
      });
      if (res.status >= 300 && res.status < 400 && res.headers.has('location')) {
        await res.body?.cancel().catch(() => undefined);
        return { ok: false, error: this.redirected(res) };
      }
      read = await readBounded(res, cap);
    } catch (err) {
      if (signal.aborted) throw this.aborted(attempt);
      if (timer.signal.aborted)
        return {
          ok: false,
          error: new ProviderError(this.name, 'timeout', `POST ${this.shown}: no answer within ${timeoutMs} ms`),
          retry: {},
        };
      // fetch throws a bare TypeError (no cause) for a request it will not send, e.g. a URL with
      // credentials; a network failure is a TypeError with the socket error as its cause.
      if (err instanceof TypeError && err.cause === undefined)
        return {
          ok: false,
          error: new ProviderError(this.name, 'request', `POST ${this.shown}: ${fetchFailure(err)}`),
        };
      return {
        ok: false,
        error: new ProviderError(this.name, 'network', `POST ${this.shown}: ${fetchFailure(err)}`),
        retry: {},
      };
    } finally {
      clearTimeout(t);
    }
    if (!read.ok) {
      const why = `the answer (HTTP ${res.status}) is larger than max_response_bytes, ${showBytes(cap)}; the rest was not read`;
      return {
        ok: false,
        error: new ProviderError(this.name, 'http', `POST ${this.shown}: ${why}`, { status: res.status }),
      };
    }
    const text = read.text;
    const json = parseJson(text);
    if (res.ok) return { ok: true, decision: this.decision(json, at) };
    const err = isRecord(json) && isRecord(json.error) ? json.error : {};
    // brainstem answers output that failed its own tool-call check this way: a decision, not a failure.
    if (err.type === 'model_output_error' && typeof err.raw === 'string')
      return {
        ok: true,
        decision: decisionOf(
          this.head(),
          { content: err.raw, toolCalls: [], finishReason: 'error', problem: String(err.message ?? '') },
          reportedUsage(isRecord(json) ? json.usage : undefined, { prompt: at.prompt, reply: err.raw }),
          { totalMs: this.clock() - started, attempts: attempt },
          () => this.newId(),
        ),
      };
    const what = typeof err.message === 'string' ? err.message : text.slice(0, 200);
    const error = new ProviderError(this.name, 'http', `POST ${this.shown}: HTTP ${res.status}: ${what}`, {
      status: res.status,
    });
    if (!retryableStatus(res.status, res.headers)) return { ok: false, error };
    const afterMs = retryAfterMs(res.headers.get('retry-after'), Date.now());
    return { ok: false, error, retry: afterMs === undefined ? {} : { afterMs } };
  }

  private decision(json: unknown, at: At): Decision {
    const { started, attempt: attempts } = at;
    const choice = isRecord(json) && Array.isArray(json.choices) ? json.choices[0] : undefined;
    if (!isRecord(choice) || !isRecord(choice.message))
      throw new ProviderError(this.name, 'http', `POST ${this.shown}: the answer has no choices[0].message`, {
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
      reportedUsage(isRecord(json) ? json.usage : undefined, {
        prompt: at.prompt,
        reply: rawText(reply.content, reply.toolCalls),
      }),
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
    return new ProviderError(this.name, 'aborted', `POST ${this.shown}: cancelled`, { attempts });
  }

  private redirected(res: Response): ProviderError {
    const to = res.headers.get('location') ?? '';
    const where = URL.canParse(to, this.url) ? redactUrl(new URL(to, this.url).href) : redactUrl(to);
    const why = `HTTP ${res.status}: redirects are not followed (to ${where}); set base_url to the API root itself`;
    return new ProviderError(this.name, 'http', `POST ${this.shown}: ${why}`, { status: res.status });
  }

  private final(e: ProviderError, attempts: number, retried: boolean): ProviderError {
    const tail = retried ? ` (gave up after ${attempts} attempts)` : '';
    return new ProviderError(this.name, e.kind, `${e.reason}${tail}`, {
      ...e.details,
      attempts,
    });
  }
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function validHeader(value: string): boolean {
  try {
    new Headers({ authorization: value });
    return true;
  } catch {
    return false;
  }
}
