// An OpenAI chat-completions body read into a ChatRequest. The checks that need no model run
// first and alone before a request queues (parseChatShape): a malformed body is a 400 at once,
// never a 429 or a model load first. Fields that would change the answer and are not
// implemented are refused by name; others a client sends (user, store, metadata…) are ignored.
import { IssueError } from '../../robot/common/validation/issue.js';
import { isRecord, showValue } from '../../robot/common/validation/values.js';
import { type ChatMessage, type ImageSink, normalizeMessages } from './chat-template.js';
import { type Schema, parseSchema } from './json-schema/schema.js';
import { RequestError, numberField } from './request-error.js';
import { type SamplingParams, resolveSampling } from './sampler.js';
import type { TextModel } from './text-config.js';
import { type RequestImage, requestImage, type VisionRuntime } from '../vision/vision-runtime.js';
import type { PreflightLimits } from '../vision/image-input.js';
import { type ToolChoice, type ToolDef, parseToolChoice, parseTools } from './tool-calls/tools.js';

export type ResponseFormat = { kind: 'text' } | { kind: 'json'; schema: Schema; raw: unknown };

/** What a body asks for apart from its messages and sampling. */
export interface ChatShape {
  tools: ToolDef[];
  toolChoice: ToolChoice;
  responseFormat: ResponseFormat;
  maxTokens?: number;
  stop: string[];
  templateKwargs: Record<string, unknown>;
  /** false: generation ends after the first tool call (`parallel_tool_calls: false`). */
  parallelToolCalls: boolean;
  /** 'none': a thinking model's <think>…</think> stays in the content (llama.cpp's option). */
  reasoningFormat: 'auto' | 'none';
}

export interface ChatRequest extends ChatShape {
  messages: ChatMessage[];
  sampling: SamplingParams;
  /** Image parts in message order (each stands as one placeholder in its message's text). */
  images: RequestImage[];
}

const MAX_STOP_LENGTH = 1024;

/** Fields that would change the answer and that this server does not implement: refused, not ignored. */
const UNSUPPORTED: Record<string, { when: (v: unknown) => boolean; why: string }> = {
  logprobs: {
    when: (v) => v === true,
    why: 'log probabilities are not returned by this server; leave it unset or false',
  },
  top_logprobs: { when: (v) => v !== null, why: 'log probabilities are not returned by this server; leave it unset' },
  functions: { when: (v) => v !== null, why: 'the legacy functions API is not supported: send `tools` instead' },
  function_call: {
    when: (v) => v !== null,
    why: 'the legacy functions API is not supported: send `tool_choice` instead',
  },
};

/** Image parts checked as far as no model is needed, and counted (each is encoded before the first
 *  token, so the context alone does not bound the work); whether the model takes images is known
 *  once it is leased. */
function imageChecks(limits: PreflightLimits): ImageSink {
  let n = 0;
  return {
    placeholder: '',
    add: (url, at) => {
      n++;
      if (limits.maxImages !== undefined && n > limits.maxImages)
        throw new RequestError(
          at,
          'max_images',
          `the request has more than engine.vision.max_images ${limits.maxImages} images (this is image ${n})`,
        );
      requestImage(url, at, limits);
    },
  };
}

/**
 * Every check of a body that needs no model, run before it queues: the shape, the messages (image
 * parts: how many, data URL, base64, byte limit, MIME against the bytes' signature, the header's
 * pixels) and the sampling fields (logit_bias ids aside); returns the shape for parseChatRequest.
 * Throws RequestError.
 */
export function preflightChatBody(body: unknown, imageLimits: PreflightLimits): ChatShape {
  const shape = parseChatShape(body);
  const fields = body as Record<string, unknown>;
  normalizeMessages(fields.messages, imageChecks(imageLimits));
  resolveSampling(fields);
  return shape;
}

/** The model-free part of a body; throws RequestError naming the field. */
export function parseChatShape(body: unknown): ChatShape {
  if (!isRecord(body)) throw new RequestError('body', 'type', `must be a JSON object, got ${showValue(body)}`);
  if (body.n !== undefined && body.n !== null && body.n !== 1)
    throw new RequestError('n', 'enum', `only n = 1 is supported, got ${showValue(body.n)}`);
  for (const [field, u] of Object.entries(UNSUPPORTED))
    if (body[field] !== undefined && u.when(body[field])) throw new RequestError(field, 'unsupported', u.why);
  const parallel = body.parallel_tool_calls ?? true;
  if (typeof parallel !== 'boolean')
    throw new RequestError('parallel_tool_calls', 'type', `must be true or false, got ${showValue(parallel)}`);
  const reasoningFormat = body.reasoning_format ?? 'auto';
  if (reasoningFormat !== 'auto' && reasoningFormat !== 'none')
    throw new RequestError('reasoning_format', 'enum', `must be "auto" or "none", got ${showValue(reasoningFormat)}`);
  const tools = parseTools(body.tools);
  const stopRaw = body.stop ?? [];
  const stop = typeof stopRaw === 'string' ? [stopRaw] : stopRaw;
  // Each is matched against the output at every token: long ones would cost the event loop per token.
  if (
    !Array.isArray(stop) ||
    stop.length > 16 ||
    stop.some((s) => typeof s !== 'string' || s === '' || s.length > MAX_STOP_LENGTH)
  ) {
    throw new RequestError(
      'stop',
      'type',
      `must be a non-empty string of at most ${MAX_STOP_LENGTH} characters or an array of at most 16 of them, got ${showValue(stopRaw)}`,
    );
  }
  const kwargs = body.chat_template_kwargs ?? {};
  if (!isRecord(kwargs))
    throw new RequestError('chat_template_kwargs', 'type', `must be an object, got ${showValue(kwargs)}`);
  const shape: ChatShape = {
    tools,
    toolChoice: parseToolChoice(body.tool_choice, tools),
    responseFormat: parseResponseFormat(body.response_format),
    maxTokens:
      body.max_completion_tokens !== undefined && body.max_completion_tokens !== null
        ? numberField(body.max_completion_tokens, 'max_completion_tokens', 1, 1e9, { integer: true })
        : numberField(body.max_tokens, 'max_tokens', 1, 1e9, { integer: true }),
    stop: stop as string[],
    templateKwargs: kwargs,
    parallelToolCalls: parallel,
    reasoningFormat,
  };
  const forced = shape.toolChoice.kind === 'required' || shape.toolChoice.kind === 'function';
  if (forced && shape.responseFormat.kind === 'json') {
    throw new RequestError(
      'response_format',
      'conflict',
      'a JSON response format cannot be combined with a required tool call',
    );
  }
  return shape;
}

/** Reads an OpenAI chat-completions body (stream handling is the caller's). Image parts need
 *  `vision` (the model's vision side); without it they are refused. `shape`: the body's, already
 *  parsed by preflightChatBody (tools' schemas are compiled once). */
export function parseChatRequest(
  body: unknown,
  model: TextModel,
  vision?: VisionRuntime,
  shape: ChatShape = parseChatShape(body),
): ChatRequest {
  const fields = body as Record<string, unknown>;
  const images: RequestImage[] = [];
  return {
    ...shape,
    messages: normalizeMessages(fields.messages, vision?.sink(images)),
    sampling: resolveSampling(fields, model.samplingDefaults, model.tokenizer.vocabSize),
    images,
  };
}

function parseResponseFormat(raw: unknown): ResponseFormat {
  if (raw === undefined || raw === null) return { kind: 'text' };
  if (!isRecord(raw)) throw new RequestError('response_format', 'type', `must be an object, got ${showValue(raw)}`);
  if (raw.type === 'text') return { kind: 'text' };
  if (raw.type === 'json_object')
    return { kind: 'json', schema: { types: ['object'], unsupported: [] }, raw: { type: 'object' } };
  if (raw.type === 'json_schema') {
    if (!isRecord(raw.json_schema))
      throw new RequestError(
        'response_format.json_schema',
        'required',
        `type "json_schema" needs a "json_schema" object with the "schema", got ${showValue(raw.json_schema)}`,
      );
    const schemaRaw = raw.json_schema.schema;
    try {
      return { kind: 'json', schema: parseSchema(schemaRaw, 'response_format.json_schema.schema'), raw: schemaRaw };
    } catch (e) {
      if (e instanceof IssueError) throw RequestError.fromSchemaIssue(e);
      throw e;
    }
  }
  throw new RequestError(
    'response_format.type',
    'enum',
    `must be "text", "json_object" or "json_schema", got ${showValue(raw.type)}`,
  );
}
