// Policy messages ↔ OpenAI chat-completions shapes, shared by the `openai` provider (over HTTP)
// and the `local` one (the daemon's own chat service takes the same body), and one reply read as
// a decision.
import { extractCall } from '../../../robot/tools/extract.js';
import type { PolicyTool } from '../tools.js';
import type {
  ContentPart,
  Decision,
  DecisionTiming,
  DecisionUsage,
  ImageSource,
  ParsedCall,
  PolicyMessage,
  RawToolCall,
} from './types.js';

export interface FormatOptions {
  /** 'url': image parts as image_url data URLs; 'text': a placeholder naming the image (text-only models). */
  images: 'url' | 'text';
}

export type OpenAiMessage = Record<string, unknown> & { role: string };

export function dataUrl(image: ImageSource): string {
  if ('url' in image) return image.url;
  return `data:${image.mime};base64,${Buffer.from(image.bytes).toString('base64')}`;
}

/** What stands in for an image the model is not shown (the same text whatever the reason, so a
 *  prompt's prefix does not change when an image it already lacked is also dropped by the history). */
export function imagePlaceholder(label: string): string {
  return `[image not shown: ${label}]`;
}

function part(p: ContentPart, o: FormatOptions): Record<string, unknown> {
  if (p.type === 'text') return { type: 'text', text: p.text };
  if (o.images === 'text') return { type: 'text', text: imagePlaceholder(p.label) };
  return { type: 'image_url', image_url: { url: dataUrl(p.image), ...(p.detail ? { detail: p.detail } : {}) } };
}

/** A call's arguments as the object chat templates need, or null when the text is not a JSON object. */
function argumentsObject(text: string): Record<string, unknown> | null {
  try {
    const v = JSON.parse(text === '' ? '{}' : text);
    return v !== null && typeof v === 'object' && !Array.isArray(v) ? v : null;
  } catch {
    return null;
  }
}

/** The request's messages. A tool result without its call in an earlier message (the call was text
 *  the model wrote, or it was summarised away) goes as user text: OpenAI rejects an unpaired tool message. */
export function toOpenAiMessages(messages: readonly PolicyMessage[], o: FormatOptions): OpenAiMessage[] {
  const calls = new Set<string>();
  return messages.map((m): OpenAiMessage => {
    switch (m.role) {
      case 'system':
        return { role: 'system', content: m.text };
      case 'user':
        return { role: 'user', content: m.content.map((p) => part(p, o)) };
      case 'assistant': {
        const c = m.toolCall;
        // Templates parse the arguments: a call whose arguments are not an object stays text.
        if (!c || (o.images === 'text' && argumentsObject(c.arguments) === null))
          return { role: 'assistant', content: c ? rawText(m.text, [c]) : m.text };
        calls.add(c.id);
        return {
          role: 'assistant',
          content: m.text === '' ? null : m.text,
          tool_calls: [{ id: c.id, type: 'function', function: { name: c.name, arguments: c.arguments } }],
        };
      }
      case 'tool':
        return calls.has(m.toolCallId)
          ? { role: 'tool', tool_call_id: m.toolCallId, content: m.text }
          : { role: 'user', content: `Result of ${m.name}: ${m.text}` };
    }
  });
}

export function toOpenAiTools(tools: readonly PolicyTool[]) {
  return tools.map((t) => ({
    type: 'function' as const,
    function: { name: t.name, description: t.description, parameters: t.parameters },
  }));
}

/** The output as one text: the content, then each native call as {"name", "arguments"} on its own line. */
export function rawText(content: string, calls: readonly RawToolCall[]): string {
  const lines = calls.map((c) => `{"name":${JSON.stringify(c.name)},"arguments":${c.arguments || '{}'}}`);
  return [content, ...lines].filter((s) => s !== '').join('\n');
}

/** Reads a reply as one tool call (robot/tools/extract.ts); `newId` names calls the model gave no id. */
export function parseReply(content: string, calls: readonly RawToolCall[], newId: () => string): ParsedCall {
  const found = extractCall(
    calls.length > 0
      ? {
          content,
          tool_calls: calls.map((c) => ({
            id: c.id,
            type: 'function',
            function: { name: c.name, arguments: c.arguments },
          })),
        }
      : content,
  );
  if (!found.ok) return { ok: false, code: found.code, message: found.message };
  const { name, args, id } = found.call;
  // Absent arguments are {}; null, an array or a scalar is a malformed call, never run as {}.
  if (args !== undefined && (args === null || typeof args !== 'object' || Array.isArray(args)))
    return {
      ok: false,
      code: 'arguments',
      message: `arguments must be a JSON object ({...}), got ${args === null ? 'null' : Array.isArray(args) ? 'an array' : `a ${typeof args}`}`,
    };
  return { ok: true, id: id ?? newId(), name, arguments: args ?? {} };
}

/** The assistant message a decision leaves in the history: its parsed call when there is one, else the raw text. */
export function assistantMessage(
  content: string,
  calls: readonly RawToolCall[],
  call: ParsedCall,
): PolicyMessage & { role: 'assistant' } {
  if (!call.ok) return { role: 'assistant', text: rawText(content, calls) };
  const native = calls.find((c) => c.id === call.id);
  return {
    role: 'assistant',
    text: native ? content : '',
    toolCall: native ?? { id: call.id, name: call.name, arguments: JSON.stringify(call.arguments) },
  };
}

/** Most characters of a model's output kept in `raw` (events.jsonl, policy.event) and the history. */
export const RECORDED_OUTPUT_CHARS = 16 * 1024;

/** `text` cut to RECORDED_OUTPUT_CHARS, saying so and how long it was. */
export function clipOutput(text: string): string {
  if (text.length <= RECORDED_OUTPUT_CHARS) return text;
  return `${text.slice(0, RECORDED_OUTPUT_CHARS)}… [truncated: ${text.length} characters, the first ${RECORDED_OUTPUT_CHARS} kept]`;
}

export interface Reply {
  content: string;
  toolCalls: RawToolCall[];
  finishReason: string;
  /** The server's own verdict on output it refused (brainstem's tool-call check); it names the problem better than a re-parse. */
  problem?: string;
}

/** A decision from one reply: parsed, with the history message; `newId` names calls without an id. */
export function decisionOf(
  head: { provider: string; model: string },
  reply: Reply,
  usage: DecisionUsage,
  timing: DecisionTiming,
  newId: () => string,
): Decision {
  let call = parseReply(reply.content, reply.toolCalls, newId);
  if (!call.ok && reply.problem) call = { ...call, message: clipOutput(reply.problem) };
  let message = assistantMessage(reply.content, reply.toolCalls, call);
  // The history re-sends this message with every prompt: its text is clipped, and a call whose
  // arguments alone pass the limit goes as clipped text (cut JSON is no call).
  if ((message.toolCall?.arguments.length ?? 0) > RECORDED_OUTPUT_CHARS)
    message = { role: 'assistant', text: clipOutput(rawText(reply.content, reply.toolCalls)) };
  else message.text = clipOutput(message.text);
  return {
    ...head,
    raw: clipOutput(rawText(reply.content, reply.toolCalls)),
    content: reply.content,
    toolCalls: reply.toolCalls,
    call,
    message,
    finishReason: reply.finishReason,
    usage,
    timing,
  };
}
