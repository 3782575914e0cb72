// Token usage as a server reports it, checked: a count that is missing, negative or not a number
// is replaced by the chars/4 estimate (marked `estimated`), so token budgets still run out against
// a server that reports nothing, and a bogus count cannot lower what an episode has used.
import { isRecord } from '../../../robot/common/validation/values.js';
import { CHARS_PER_TOKEN } from '../tokens.js';
import type { DecisionUsage } from './types.js';

export interface UsageEstimate {
  /** The prompt's estimated tokens (computed only when the server did not say). */
  prompt: () => number;
  /** The reply's text, estimated at chars/4 when the server did not say. */
  reply: string;
}

/** A reported count as a non-negative integer, or undefined when it is not one. */
function count(v: unknown): number | undefined {
  if (typeof v !== 'number' || !Number.isFinite(v) || v < 0) return undefined;
  return Math.min(Math.round(v), Number.MAX_SAFE_INTEGER);
}

/** `usage` of an answer (prompt_tokens, completion_tokens, prompt_tokens_details.cached_tokens). */
export function reportedUsage(usage: unknown, estimate: UsageEstimate): DecisionUsage {
  const u = isRecord(usage) ? usage : {};
  const prompt = count(u.prompt_tokens);
  const completion = count(u.completion_tokens);
  const out: DecisionUsage = {
    promptTokens: prompt ?? estimate.prompt(),
    completionTokens: completion ?? Math.ceil(estimate.reply.length / CHARS_PER_TOKEN),
  };
  if (prompt === undefined || completion === undefined) out.estimated = true;
  const cached = count(isRecord(u.prompt_tokens_details) ? u.prompt_tokens_details.cached_tokens : undefined);
  // Cached tokens are a part of a reported prompt count; beside an estimate they mean nothing.
  if (cached !== undefined && prompt !== undefined) {
    out.cachedTokens = Math.min(cached, prompt);
    out.prefilledTokens = prompt - out.cachedTokens;
  }
  return out;
}
