// Chat outcomes in OpenAI's wire shapes (chat.completion, chat.completion.chunk, usage), plus
// brainstem's `timings` (llama-server reports one too). Shared by HTTP and WebSocket replies.
import type { ChatEvent, ChatFinish } from '../../engine/chat.js';
import type { ChatOutcome } from '../../engine/chat-service.js';
import { newId } from '../../engine/chat-service.js';
import type { ToolCall } from '../../engine/tool-calls/resolve.js';

export interface OpenAiToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

export function toolCallJson(call: ToolCall, id = newId('call_')): OpenAiToolCall {
  return { id, type: 'function', function: { name: call.name, arguments: JSON.stringify(call.arguments) } };
}

const round = (x: number, digits = 3) => Math.round(x * 10 ** digits) / 10 ** digits;

export function usageJson(o: ChatOutcome) {
  const u = o.result.usage;
  return {
    prompt_tokens: u.promptTokens,
    completion_tokens: u.completionTokens,
    total_tokens: u.promptTokens + u.completionTokens,
    prompt_tokens_details: { cached_tokens: u.cachedTokens },
  };
}

export function timingsJson(o: ChatOutcome) {
  const t = o.result.timings;
  return {
    prefill_tokens: t.prefillTokens,
    prefill_ms: round(t.prefillMs),
    prefill_tokens_per_second: round(t.prefillTokensPerSecond, 2),
    decode_tokens: t.decodeTokens,
    decode_ms: round(t.decodeMs),
    decode_tokens_per_second: round(t.decodeTokensPerSecond, 2),
    time_to_first_token_ms: round(t.timeToFirstTokenMs),
    queue_ms: round(o.queuedMs),
    load_ms: round(o.loadMs),
    total_ms: round(t.totalMs),
  };
}

/** OpenAI has no "cancelled": a cancelled output simply ended early. */
export function finishJson(f: ChatFinish): string {
  return f === 'cancelled' ? 'stop' : f;
}

/** The non-streaming chat.completion body. */
export function completionJson(o: ChatOutcome, toolCallIds: string[] = []) {
  const calls = o.result.toolCalls.map((c, i) => toolCallJson(c, toolCallIds[i]));
  return {
    id: o.id,
    object: 'chat.completion',
    created: o.created,
    model: o.model,
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: calls.length > 0 && o.result.content === '' ? null : o.result.content,
          ...(o.result.reasoning ? { reasoning_content: o.result.reasoning } : {}),
          ...(calls.length ? { tool_calls: calls } : {}),
        },
        logprobs: null,
        finish_reason: finishJson(o.result.finishReason),
      },
    ],
    usage: usageJson(o),
    timings: timingsJson(o),
  };
}

export interface ChunkHead {
  id: string;
  created: number;
  model: string;
}

export function chunkJson(
  head: ChunkHead,
  delta: Record<string, unknown>,
  finish: string | null = null,
  more: Record<string, unknown> = {},
) {
  return {
    id: head.id,
    object: 'chat.completion.chunk',
    created: head.created,
    model: head.model,
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
    ...more,
  };
}

/**
 * The delta of one chat event (a whole tool call arrives in one chunk, arguments complete). A
 * tool call's id goes to ids[index], so a reply that also carries the final message
 * (completionJson(o, ids)) names each call as its delta did.
 */
export function eventDelta(e: ChatEvent, ids: string[] = []): Record<string, unknown> {
  if (e.type === 'content') return { content: e.text };
  if (e.type === 'reasoning') return { reasoning_content: e.text };
  ids[e.index] ??= newId('call_');
  return { tool_calls: [{ index: e.index, ...toolCallJson(e.call, ids[e.index]) }] };
}
