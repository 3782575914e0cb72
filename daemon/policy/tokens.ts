// The prompt-size estimate for providers without a tokenizer here: ~4 characters of text per
// token (the usual rule for English and JSON with BPE tokenizers), a few tokens of framing per
// message, and a fixed cost per image (hosted vision models charge roughly 800–1600 tokens for a
// 1280-px frame). It errs high on purpose: the history policy keeps the prompt under it.
import type { PolicyMessage } from './providers/types.js';
import type { PolicyTool } from './tools.js';

export const CHARS_PER_TOKEN = 4;
/** Role markers and separators around each message. */
export const MESSAGE_OVERHEAD_TOKENS = 4;
export const DEFAULT_IMAGE_TOKENS = 1000;

const textTokens = (s: string): number => Math.ceil(s.length / CHARS_PER_TOKEN);

/** Estimated tokens of one message (images at `imageTokens` each). */
export function estimateMessageTokens(m: PolicyMessage, imageTokens = DEFAULT_IMAGE_TOKENS): number {
  let n = MESSAGE_OVERHEAD_TOKENS;
  switch (m.role) {
    case 'user':
      for (const p of m.content) n += p.type === 'text' ? textTokens(p.text) : imageTokens;
      return n;
    case 'assistant':
      return n + textTokens(m.text) + (m.toolCall ? textTokens(m.toolCall.name + m.toolCall.arguments) + 8 : 0);
    case 'tool':
      return n + textTokens(m.name + m.text);
    default:
      return n + textTokens(m.text);
  }
}

/** Estimated tokens of a whole prompt: its messages and the tool definitions as JSON. */
export function estimateTokens(
  messages: readonly PolicyMessage[],
  tools: readonly PolicyTool[],
  imageTokens = DEFAULT_IMAGE_TOKENS,
): number {
  let n = tools.length ? textTokens(JSON.stringify(tools)) : 0;
  for (const m of messages) n += estimateMessageTokens(m, imageTokens);
  return n;
}
