// Chat messages (OpenAI shape) → prompt text through the model's Jinja chat template
// (@huggingface/jinja), with tools, assistant tool calls, tool results and the generation prompt.
import { Template } from '@huggingface/jinja';
import { issueRule } from '../../robot/common/validation/issue.js';
import { prototypeKeyIssues } from '../../robot/common/validation/json-guard.js';
import { isRecord, showValue } from '../../robot/common/validation/values.js';
import { RequestError } from './request-error.js';

export interface ChatToolCall {
  id?: string;
  type: 'function';
  function: { name: string; arguments: Record<string, unknown> };
}

export interface ChatMessage {
  role: 'system' | 'user' | 'assistant' | 'tool';
  content: string;
  name?: string;
  tool_calls?: ChatToolCall[];
  tool_call_id?: string;
  reasoning_content?: string;
}

export class TemplateError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'TemplateError';
  }
}

export interface RenderOptions {
  messages: ChatMessage[];
  /** Tools in OpenAI form ({type: 'function', function: {...}}), as templates expect them. */
  tools?: unknown[];
  addGenerationPrompt?: boolean;
  /** Extra template variables (e.g. enable_thinking). */
  kwargs?: Record<string, unknown>;
}

export class ChatTemplate {
  private readonly templates = new Map<string, Template>();

  /** `sources`: template name → Jinja source ('default', and e.g. 'tool_use'). */
  constructor(
    sources: ReadonlyMap<string, string>,
    private readonly specials: { bos_token?: string; eos_token?: string } = {},
  ) {
    for (const [name, source] of sources) {
      try {
        this.templates.set(name, new Template(source));
      } catch (e) {
        throw new TemplateError(`chat template "${name}" does not parse: ${(e as Error).message}`);
      }
    }
    if (!this.templates.has('default') && this.templates.size > 0) {
      this.templates.set('default', this.templates.values().next().value!);
    }
    if (this.templates.size === 0)
      throw new TemplateError(
        'the model has no chat template (tokenizer_config.json chat_template or chat_template.jinja)',
      );
  }

  render(opts: RenderOptions): string {
    const hasTools = (opts.tools?.length ?? 0) > 0;
    const template = (hasTools && this.templates.get('tool_use')) || this.templates.get('default')!;
    try {
      return template.render({
        ...opts.kwargs,
        messages: opts.messages,
        // Python's None, as transformers passes it: templates test both `if tools` and `tools is not none`.
        tools: hasTools ? opts.tools : null,
        add_generation_prompt: opts.addGenerationPrompt ?? true,
        bos_token: this.specials.bos_token ?? '',
        eos_token: this.specials.eos_token ?? '',
      });
    } catch (e) {
      throw new RequestError(
        'messages',
        'template',
        `the chat template rejected the conversation: ${(e as Error).message}`,
      );
    }
  }
}

const ROLES = new Set(['system', 'user', 'assistant', 'tool', 'developer']);

/** Where image content parts go: `add` takes the part's image_url.url (checking it) and the text
 *  standing for the image in the message is `placeholder`. Absent: the model takes text only. */
export interface ImageSink {
  readonly placeholder: string;
  add(url: unknown, at: string): void;
}

/** Checks OpenAI-style messages and turns them into what chat templates read. */
export function normalizeMessages(raw: unknown, images?: ImageSink): ChatMessage[] {
  if (!Array.isArray(raw) || raw.length === 0)
    throw new RequestError('messages', 'required', `must be a non-empty array, got ${showValue(raw)}`);
  return raw.map((m, i) => {
    const at = `messages[${i}]`;
    if (!isRecord(m)) throw new RequestError(at, 'type', `must be an object, got ${showValue(m)}`);
    if (typeof m.role !== 'string' || !ROLES.has(m.role)) {
      throw new RequestError(
        `${at}.role`,
        'enum',
        `must be one of system, developer (read as system), user, assistant, tool, got ${showValue(m.role)}`,
      );
    }
    const role = m.role === 'developer' ? 'system' : (m.role as ChatMessage['role']);
    const out: ChatMessage = {
      role,
      content: contentText(m.content, `${at}.content`, role === 'assistant', images),
    };
    if (typeof m.name === 'string') out.name = m.name;
    if (typeof m.reasoning_content === 'string') out.reasoning_content = m.reasoning_content;
    if (role === 'tool') {
      if (m.tool_call_id !== undefined && typeof m.tool_call_id !== 'string') {
        throw new RequestError(`${at}.tool_call_id`, 'type', `must be a string, got ${showValue(m.tool_call_id)}`);
      }
      if (m.tool_call_id !== undefined) out.tool_call_id = m.tool_call_id as string;
    }
    if (m.tool_calls !== undefined && m.tool_calls !== null) {
      if (role !== 'assistant')
        throw new RequestError(`${at}.tool_calls`, 'role', 'only assistant messages carry tool_calls');
      if (!Array.isArray(m.tool_calls))
        throw new RequestError(`${at}.tool_calls`, 'type', `must be an array, got ${showValue(m.tool_calls)}`);
      out.tool_calls = m.tool_calls.map((c, j) => toolCall(c, `${at}.tool_calls[${j}]`));
    }
    return out;
  });
}

function contentText(content: unknown, at: string, nullable: boolean, images?: ImageSink): string {
  if (typeof content === 'string') return content;
  if ((content === null || content === undefined) && nullable) return '';
  if (Array.isArray(content)) {
    return content
      .map((part, k) => {
        if (isRecord(part) && part.type === 'text' && typeof part.text === 'string') return part.text;
        if (isRecord(part) && part.type === 'image_url') {
          if (!images)
            throw new RequestError(
              `${at}[${k}]`,
              'vision',
              'this model takes text only (its folder has no vision tower); send image parts to a vision model',
            );
          const url = isRecord(part.image_url) ? part.image_url.url : part.image_url;
          images.add(url, `${at}[${k}].image_url.url`);
          return images.placeholder;
        }
        throw new RequestError(
          `${at}[${k}]`,
          'type',
          `only {"type": "text", "text": ...} and {"type": "image_url", ...} parts are supported, got ${showValue(part)}`,
        );
      })
      .join('\n');
  }
  throw new RequestError(at, 'type', `must be a string or an array of text parts, got ${showValue(content)}`);
}

function toolCall(c: unknown, at: string): ChatToolCall {
  if (!isRecord(c) || !isRecord(c.function))
    throw new RequestError(`${at}.function`, 'required', `a tool call needs a "function" object, got ${showValue(c)}`);
  const f = c.function;
  if (typeof f.name !== 'string' || f.name === '')
    throw new RequestError(`${at}.function.name`, 'type', `must be a non-empty string, got ${showValue(f.name)}`);
  let args: unknown = f.arguments ?? {};
  if (typeof args === 'string') {
    try {
      args = args.trim() === '' ? {} : JSON.parse(args);
    } catch (e) {
      throw new RequestError(`${at}.function.arguments`, 'json', `is not valid JSON: ${(e as Error).message}`);
    }
  }
  if (!isRecord(args))
    throw new RequestError(`${at}.function.arguments`, 'type', `must encode a JSON object, got ${showValue(args)}`);
  // Arguments sent as a string escape the body's reserved-key check: the same rule here.
  const reserved = prototypeKeyIssues(args, `${at}.function.arguments`, 1)[0];
  if (reserved) throw new RequestError(reserved.path, 'reserved_key', issueRule(reserved));
  const out: ChatToolCall = { type: 'function', function: { name: f.name, arguments: args } };
  if (typeof c.id === 'string') out.id = c.id;
  return out;
}
