// Finds the one decision in a model's reply, in any of the forms models emit: an OpenAI
// assistant message with `tool_calls`, a single native call, or text holding a Hermes
// `<tool_call>{...}</tool_call>`, a fenced ```json block, or a bare JSON object. A reply with
// text around the call, several calls, or an array of calls is refused: one reply, one decision.
import { parseStrictJson } from './strict-json.js';

export type CallSource = 'openai' | 'hermes' | 'fenced' | 'json' | 'object';
export type RejectCode =
  | 'empty'
  | 'text_outside'
  | 'several'
  | 'array'
  | 'json'
  | 'shape'
  | 'unknown_tool'
  | 'arguments';

export interface RawCall {
  name: string;
  /** Parsed arguments (undefined when the call gave none). */
  args: unknown;
  id: string | null;
  source: CallSource;
}

export type Extracted = { ok: true; call: RawCall } | { ok: false; code: RejectCode; message: string };

const SHAPE = 'a tool call is {"name": "<tool>", "arguments": {...}}';

export function extractCall(input: unknown): Extracted {
  if (typeof input === 'string') return fromText(input);
  if (Array.isArray(input)) return arrayOfCalls(input.length);
  if (input === null || typeof input !== 'object')
    return fail('shape', `expected a tool call, got ${input === null ? 'null' : typeof input}; ${SHAPE}`);
  const o = input as Record<string, unknown>;
  if ('tool_calls' in o) {
    const calls = o.tool_calls;
    if (calls !== null && calls !== undefined && !Array.isArray(calls))
      return fail('shape', 'tool_calls must be an array');
    const list = (calls ?? []) as unknown[];
    if (list.length > 1)
      return fail('several', `${list.length} tool calls in one reply; send exactly one tool call per reply`);
    if (list.length === 1) return fromNative(list[0]);
    return typeof o.content === 'string'
      ? fromText(o.content)
      : fail('empty', 'no tool call found; reply with exactly one tool call');
  }
  if ('function' in o) return fromNative(o);
  return fromObject(o, 'object');
}

function fail(code: RejectCode, message: string): Extracted {
  return { ok: false, code, message };
}

function arrayOfCalls(n: number): Extracted {
  return fail(
    'array',
    `got an array of ${n} item${n === 1 ? '' : 's'}; send one tool call object, not an array of decisions`,
  );
}

/** OpenAI form: {id, type: "function", function: {name, arguments: "<JSON>" | {...}}}. */
function fromNative(v: unknown): Extracted {
  const c = v as { id?: unknown; type?: unknown; function?: unknown } | null;
  if (c === null || typeof c !== 'object' || Array.isArray(c))
    return fail('shape', 'each entry of tool_calls must be an object');
  if (c.type !== undefined && c.type !== 'function')
    return fail('shape', `tool_calls[0].type must be "function" (got ${JSON.stringify(c.type)})`);
  const f = c.function as { name?: unknown; arguments?: unknown } | null | undefined;
  if (f === null || typeof f !== 'object' || Array.isArray(f))
    return fail('shape', 'tool_calls[0].function must be an object with name and arguments');
  if (typeof f.name !== 'string') return fail('shape', 'tool_calls[0].function.name must be the tool name as a string');
  const args = parseArguments(f.arguments);
  if (!args.ok) return args;
  return {
    ok: true,
    call: { name: f.name, args: args.args, id: typeof c.id === 'string' ? c.id : null, source: 'openai' },
  };
}

/** {name, arguments | parameters} as an object (Llama-style models say "parameters"). */
function fromObject(o: Record<string, unknown>, source: CallSource): Extracted {
  const extra = Object.keys(o).filter((k) => !['name', 'arguments', 'parameters', 'id'].includes(k));
  if (extra.length) return fail('shape', `unexpected field ${JSON.stringify(extra[0])} in the tool call; ${SHAPE}`);
  if (!('name' in o)) return fail('shape', `the tool call has no "name"; ${SHAPE}`);
  if (typeof o.name !== 'string')
    return fail('shape', `"name" must be the tool name as a string (got ${JSON.stringify(o.name)})`);
  if ('arguments' in o && 'parameters' in o) return fail('shape', 'give "arguments" or "parameters", not both');
  const args = parseArguments('arguments' in o ? o.arguments : o.parameters);
  if (!args.ok) return args;
  return { ok: true, call: { name: o.name, args: args.args, id: typeof o.id === 'string' ? o.id : null, source } };
}

/** Arguments may arrive as an object or as a JSON string of one (OpenAI sends strings). */
function parseArguments(a: unknown): { ok: true; args: unknown } | { ok: false; code: RejectCode; message: string } {
  if (typeof a !== 'string') return { ok: true, args: a };
  if (a.trim() === '') return { ok: true, args: undefined };
  const r = parseStrictJson(a);
  if (!r.ok) return { ok: false, code: 'arguments', message: `arguments is not valid JSON: ${r.error}` };
  if (typeof r.value === 'string')
    return {
      ok: false,
      code: 'arguments',
      message: 'arguments is a JSON string inside a string; send the arguments object itself',
    };
  return { ok: true, args: r.value };
}

function fromText(raw: string): Extracted {
  let text = raw.trim();
  while (text.startsWith('<think>')) {
    const end = text.indexOf('</think>');
    if (end < 0) return fail('empty', 'the <think> block is not closed and no tool call follows it');
    text = text.slice(end + '</think>'.length).trim();
  }
  if (text === '') return fail('empty', 'no tool call found; reply with exactly one tool call');
  const tagged = wrapped(text, /<tool_call>/g, '<tool_call>', '</tool_call>');
  if (tagged) return tagged.ok ? fromJson(tagged.body, 'hermes') : tagged.error;
  const fenced = wrapped(text, /```[A-Za-z_]*[ \t]*\r?\n?/g, '```', '```');
  if (fenced) return fenced.ok ? fromJson(fenced.body, 'fenced') : fenced.error;
  if (text.startsWith('{') || text.startsWith('[')) return fromJson(text, 'json');
  const brace = text.indexOf('{');
  if (brace > 0) return textOutside('before', text.slice(0, brace));
  return fail(
    'empty',
    `no tool call found in the reply ${preview(text)}; reply with exactly one tool call and nothing else`,
  );
}

type Wrapped = { ok: true; body: string } | { ok: false; error: Extracted };

/** Body of the single `open … close` block, refusing text outside it and repeated blocks. */
function wrapped(text: string, opener: RegExp, open: string, close: string): Wrapped | null {
  const opens = [...text.matchAll(opener)];
  if (opens.length === 0) return null;
  const first = opens[0]!;
  if (first.index! > 0) return { ok: false, error: textOutside('before', text.slice(0, first.index)) };
  const start = first.index! + first[0].length;
  const end = text.indexOf(close, start);
  const after = end < 0 ? '' : text.slice(end + close.length).trim();
  const blocks = open === close ? Math.ceil(opens.length / 2) : opens.length;
  if (blocks > 1 || (after !== '' && after.includes(open))) {
    return {
      ok: false,
      error: fail('several', `${Math.max(blocks, 2)} tool calls in one reply; send exactly one tool call per reply`),
    };
  }
  if (after !== '') return { ok: false, error: textOutside('after', after) };
  return { ok: true, body: end < 0 ? text.slice(start) : text.slice(start, end) };
}

function fromJson(body: string, source: CallSource): Extracted {
  const r = parseStrictJson(body);
  if (!r.ok) {
    if (r.error.startsWith('another JSON value'))
      return fail('several', 'more than one JSON object in the reply; send exactly one tool call per reply');
    if (r.error.startsWith('unexpected text')) return textOutside('after', body.slice(r.position));
    return fail('json', `the tool call is not valid JSON: ${r.error}`);
  }
  if (Array.isArray(r.value)) return arrayOfCalls(r.value.length);
  if (r.value === null || typeof r.value !== 'object')
    return fail('shape', `the tool call must be a JSON object; ${SHAPE}`);
  return fromObject(r.value as Record<string, unknown>, source);
}

function textOutside(where: 'before' | 'after', text: string): Extracted {
  return fail('text_outside', `text ${where} the tool call (${preview(text.trim())}); reply with only the tool call`);
}

function preview(s: string): string {
  return JSON.stringify(s.length > 40 ? `${s.slice(0, 39)}…` : s);
}
