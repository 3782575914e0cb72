// The one interface every policy provider implements: a prompt (messages + tool definitions +
// limits) in, one decision out. A decision keeps the model's output as it came (malformed output
// included: the loop returns it to the model as a tool error and never executes it) next to the
// parsed call, token usage and timing.
import type { RejectCode } from '../../../robot/tools/extract.js';
import type { PolicyTool } from '../tools.js';

/** Image bytes as a data URL (`data:image/jpeg;base64,…`) or as raw bytes with their MIME type. */
export type ImageSource = { url: string } | { mime: string; bytes: Uint8Array };

export type ContentPart =
  | { type: 'text'; text: string }
  | {
      type: 'image';
      image: ImageSource;
      /** What the image shows, e.g. "camera top, decision 4" (used when the image is dropped or not shown). */
      label: string;
      /** OpenAI's image detail hint. */
      detail?: 'auto' | 'low' | 'high';
    };

/** A tool call as the model emitted it: arguments stay the model's JSON text. */
export interface RawToolCall {
  id: string;
  name: string;
  arguments: string;
}

export type PolicyMessage =
  | { role: 'system'; text: string }
  | { role: 'user'; content: ContentPart[] }
  /** One decision: text (the whole reply when it held no native call) and at most one call. */
  | { role: 'assistant'; text: string; toolCall?: RawToolCall }
  /** The outcome of the call `toolCallId` of an earlier assistant message. */
  | { role: 'tool'; toolCallId: string; name: string; text: string };

export interface DecisionLimits {
  /** Most tokens the reply may use. */
  maxTokens?: number;
  temperature?: number;
  seed?: number;
}

export interface DecisionRequest {
  messages: PolicyMessage[];
  tools: PolicyTool[];
  limits?: DecisionLimits;
}

/** The reply read as one tool call (robot/tools/extract.ts), or why it is not one. */
export type ParsedCall =
  | { ok: true; id: string; name: string; arguments: unknown }
  | { ok: false; code: RejectCode; message: string };

export interface DecisionUsage {
  promptTokens: number;
  completionTokens: number;
  /** Prompt tokens the server reused from its prompt cache, when it says. */
  cachedTokens?: number;
  /** Prompt tokens actually run through the model (prompt − cached), when known. */
  prefilledTokens?: number;
  /** True when the numbers are the chars/4 estimate, not a tokenizer's count. */
  estimated?: boolean;
}

export interface DecisionTiming {
  /** From decide() to the decision, retries and backoff included (ms, the provider's clock). */
  totalMs: number;
  /** Requests sent (1 + retries). */
  attempts: number;
  queueMs?: number;
  prefillMs?: number;
  decodeMs?: number;
}

export interface Decision {
  provider: string;
  model: string;
  /** The output as text: the content, then each native tool call as {"name", "arguments"} JSON. */
  raw: string;
  content: string;
  toolCalls: RawToolCall[];
  call: ParsedCall;
  /** The assistant message to append to the history (the parsed call when there is one). */
  message: PolicyMessage & { role: 'assistant' };
  finishReason: string;
  usage: DecisionUsage;
  timing: DecisionTiming;
}

/** Counts a prompt's tokens the way the provider's model will see them. */
export type TokenCounter = (messages: readonly PolicyMessage[], tools: readonly PolicyTool[]) => number;

/** What the history policy needs from a provider to keep a prompt inside the model's context. */
export interface PromptBudget {
  /** Tokens the model's context holds (prompt + reply), when the provider knows. */
  contextTokens?: number;
  /** An exact counter (the local model's template and tokenizer); absent: the chars/4 estimate. */
  count?: TokenCounter;
}

export interface PolicyProvider {
  readonly name: string;
  decide(req: DecisionRequest, signal: AbortSignal): Promise<Decision>;
  /** The model's context and token counter, when the provider can tell. */
  promptBudget?(signal: AbortSignal): Promise<PromptBudget>;
}

/** http: the server refused; timeout / network: no answer; request: the request cannot be served as
 *  given; model: the model failed; busy: the local model's queue stayed full through every retry;
 *  script: the scripted provider's file; aborted: the caller cancelled. */
export type ProviderErrorKind = 'http' | 'timeout' | 'network' | 'request' | 'model' | 'busy' | 'script' | 'aborted';

/** A decision that could not be obtained (not a malformed one: those are decisions). */
export class ProviderError extends Error {
  constructor(
    readonly provider: string,
    readonly kind: ProviderErrorKind,
    /** The problem, without the provider prefix. */
    readonly reason: string,
    readonly details: { status?: number; attempts?: number } = {},
  ) {
    super(`${provider} provider: ${reason}`);
    this.name = 'ProviderError';
  }
}
