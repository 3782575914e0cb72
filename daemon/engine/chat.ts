// One chat completion, engine-independent: OpenAI-style request → template → tokens → generate
// (constrained when tool_choice or response_format asks) → content deltas and tool calls.
// The HTTP and WebSocket layers drive this and only translate its events and result.
import { formatIssues } from '../../robot/common/validation/issue.js';
import type { ChatRequest } from './chat-request.js';
import type { ConstraintFactory } from './constrained/constraints.js';
import { GrammarError } from './constrained/grammar.js';
import {
  type FinishReason as TokenFinish,
  type GenerationResult,
  type Timings,
  type TokenConstraint,
  type Usage,
  generate,
} from './generate.js';
import type { Schema } from './json-schema/schema.js';
import { validateJson } from './json-schema/validate.js';
import type { AdapterRef, PrefixSession } from './prefix-cache.js';
import { RequestError } from './request-error.js';
import { Sampler } from './sampler.js';
import type { TextModel } from './text-config.js';
import { ToolCallError } from './tool-calls/errors.js';
import type { ToolCall } from './tool-calls/resolve.js';
import { ToolCallStreamParser } from './tool-calls/stream-parser.js';
import { type ReasoningPiece, ReasoningSplitter, promptOpensThinking } from './reasoning.js';
import type { PromptImages } from '../vision/splice.js';
import type { ToolDef } from './tool-calls/tools.js';

export type ChatEvent =
  | { type: 'content'; text: string }
  | { type: 'reasoning'; text: string }
  | { type: 'tool_call'; call: ToolCall; index: number };

export type ChatFinish = TokenFinish | 'tool_calls' | 'error';

export interface ChatResult {
  content: string;
  /** A thinking model's reasoning (between <think> and </think>), apart from the content. */
  reasoning: string;
  toolCalls: ToolCall[];
  finishReason: ChatFinish;
  /** Why the output was rejected (finishReason 'error'). */
  error?: ToolCallError;
  usage: Usage;
  timings: Timings;
}

export interface ChatRunOptions {
  constraints: ConstraintFactory;
  signal?: AbortSignal;
  clock?: () => number;
  /** Tokens the session may hold (prompt + output); defaults to the model's declared context. */
  contextLength?: number;
  /** The prompt, when the caller already rendered it (chatPrompt) to pick a cached session. */
  prompt?: readonly number[];
  /** When the request arrived (clock ms): time to first token then includes queueing and loading. */
  startedAt?: number;
  /** LoRA adapter the request runs with (default: the base model). */
  adapter?: AdapterRef | null;
  /** Routing width (experts per token) the request runs at (default null: the model's). */
  topK?: number | null;
  /** The prompt's image rows (the prompt was spliced by splicePrompt). */
  images?: PromptImages;
}

/** The request's prompt tokens: the chat template with its tools and the generation prompt. */
export function chatPrompt(model: TextModel, req: ChatRequest): number[] {
  return model.tokenizer.encode(promptText(model, req));
}

/** chatPrompt, with long prompts encoded off the event loop (what a served request takes). */
export function chatPromptAsync(model: TextModel, req: ChatRequest): Promise<number[]> {
  return model.tokenizer.encodeAsync(promptText(model, req));
}

function promptText(model: TextModel, req: ChatRequest): string {
  return model.template.render({
    messages: req.messages,
    tools: req.tools.map((t) => t.openai),
    addGenerationPrompt: true,
    kwargs: req.templateKwargs,
  });
}

/** Refuses a prompt of `tokens` that leaves no room to generate in a context of `context`. */
export function checkContext(tokens: number, context: number): void {
  if (tokens >= context)
    throw new RequestError('messages', 'context', `the prompt has ${tokens} tokens; the context holds ${context}`);
}

export async function* runChat(
  model: TextModel,
  session: PrefixSession,
  req: ChatRequest,
  o: ChatRunOptions,
): AsyncGenerator<ChatEvent, ChatResult> {
  const clock = o.clock ?? (() => performance.now());
  const startedAt = o.startedAt ?? clock();
  const choice = req.toolChoice;
  const forced = choice.kind === 'required' || choice.kind === 'function';
  // A named tool_choice narrows what may be called; the template still lists every tool.
  const callable = choice.kind === 'function' ? req.tools.filter((t) => t.name === choice.name) : req.tools;
  const parseCalls = callable.length > 0 && choice.kind !== 'none' && req.responseFormat.kind === 'text';
  const prompt = o.prompt ?? chatPrompt(model, req);
  const context = o.contextLength ?? model.maxContext ?? Infinity;
  checkContext(prompt.length, context);
  const maxTokens = Math.min(req.maxTokens ?? Infinity, context - prompt.length, 1 << 20);
  const constraint = buildConstraint(req, callable, o.constraints, forced);
  // A malformed tool call stops generation at once: nothing after it can make it valid.
  const stopper = new AbortController();
  const signal = o.signal ? AbortSignal.any([o.signal, stopper.signal]) : stopper.signal;
  const parser = parseCalls ? new ToolCallStreamParser(callable) : undefined;
  // Constrained output is the grammar's from its first token: no reasoning to split off.
  const splitter =
    req.reasoningFormat === 'none' || constraint
      ? undefined
      : new ReasoningSplitter(promptOpensThinking(model.tokenizer.decode(prompt.slice(-8))));
  const toolCalls: ToolCall[] = [];
  let content = '';
  let reasoning = '';
  let error: ToolCallError | undefined;
  let oneCallDone = false;
  const handle = function* (events: ReturnType<ToolCallStreamParser['push']>): Generator<ChatEvent> {
    for (const ev of events) {
      if (oneCallDone) return; // parallel_tool_calls false: what follows the call is not used
      if (ev.type === 'content') {
        content += ev.text;
        yield ev;
      } else if (ev.type === 'tool_call') {
        toolCalls.push(ev.call);
        yield { type: 'tool_call', call: ev.call, index: toolCalls.length - 1 };
        if (!req.parallelToolCalls) {
          oneCallDone = true;
          stopper.abort();
        }
      } else {
        error = ev.error;
        stopper.abort();
      }
    }
  };
  // Generated text → reasoning, and the answer → tool-call parser (when calls are parsed) or content.
  const feed = function* (pieces: ReasoningPiece[]): Generator<ChatEvent> {
    for (const p of pieces) {
      if (p.type === 'reasoning') {
        reasoning += p.text;
        yield { type: 'reasoning', text: p.text };
      } else if (parser) yield* handle(parser.push(p.text));
      else {
        content += p.text;
        yield { type: 'content', text: p.text };
      }
    }
  };
  const gen = generate(session, {
    prompt,
    maxTokens,
    sampler: new Sampler(req.sampling, model.stopTokens),
    detokenizer: model.tokenizer.streamDecoder(),
    stopTokens: model.stopTokens,
    stopStrings: req.stop,
    vocabSize: model.tokenizer.vocabSize,
    constraint,
    adapter: o.adapter ?? null,
    topK: o.topK ?? null,
    ...(o.images ? { images: o.images } : {}),
    signal,
    clock,
    startedAt,
  });
  let step: IteratorResult<string, GenerationResult>;
  try {
    step = await gen.next();
    while (!step.done) {
      yield* feed(splitter ? splitter.push(step.value) : [{ type: 'content', text: step.value }]);
      step = await gen.next();
    }
  } finally {
    // The consumer stopped early (e.g. the client went away): close the token loop too.
    await gen.return(undefined as never);
  }
  const result = step.value;
  if (splitter && !error) yield* feed(splitter.end());
  // Cut by the length limit or a stop string, an unfinished call is returned as text.
  if (parser && !error && !o.signal?.aborted)
    yield* handle(parser.end(result.finishReason === 'length' || result.stopString !== undefined));
  let finishReason: ChatFinish = result.finishReason;
  if (error) finishReason = 'error';
  else if (o.signal?.aborted) finishReason = 'cancelled';
  else if (toolCalls.length > 0 && (result.finishReason === 'stop' || !req.parallelToolCalls))
    finishReason = 'tool_calls';
  else if (req.responseFormat.kind === 'json' && result.finishReason === 'stop')
    error = checkJson(content, req.responseFormat.schema);
  if (error) finishReason = 'error';
  return { content, reasoning, toolCalls, finishReason, error, usage: result.usage, timings: result.timings };
}

function buildConstraint(
  req: ChatRequest,
  callable: ToolDef[],
  factory: ConstraintFactory,
  forced: boolean,
): TokenConstraint | undefined {
  try {
    if (forced) return factory.toolCall(callable);
    if (req.responseFormat.kind === 'json') return factory.json(req.responseFormat.schema, req.responseFormat.raw);
  } catch (e) {
    if (e instanceof GrammarError) throw new RequestError(forced ? 'tools' : 'response_format', 'grammar', e.message);
    throw e;
  }
  return undefined;
}

// The constrained output should always pass; this guards the guarantee rather than trusting it.
function checkJson(text: string, schema: Schema): ToolCallError | undefined {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    return new ToolCallError('invalid_json', `the response is not valid JSON: ${(e as Error).message}`, text);
  }
  const issues = validateJson(value, schema);
  return issues.length > 0
    ? new ToolCallError(
        'invalid_arguments',
        `the response does not match the schema: ${formatIssues(issues)}`,
        text,
        undefined,
        issues,
      )
    : undefined;
}
