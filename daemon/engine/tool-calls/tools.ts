// Tool definitions and tool_choice from an OpenAI-style request, checked up front so a bad tool
// is a 400 naming the field, not a confusing generation.
import { IssueError } from '../../../robot/common/validation/issue.js';
import { isRecord, showValue } from '../../../robot/common/validation/values.js';
import { type Schema, parseSchema } from '../json-schema/schema.js';
import { RequestError } from '../request-error.js';

export interface ToolDef {
  name: string;
  description?: string;
  /** The parameters schema (an object schema). */
  schema: Schema;
  /** The tool as the request gave it ({type: 'function', function: {...}}), for the chat template. */
  openai: { type: 'function'; function: { name: string; description?: string; parameters: unknown } };
}

export type ToolChoice =
  | { kind: 'none' }
  | { kind: 'auto' }
  | { kind: 'required' }
  | { kind: 'function'; name: string };

const NAME = /^[A-Za-z0-9_-]{1,64}$/;

/** Parses `tools` (undefined or null = no tools). */
export function parseTools(raw: unknown): ToolDef[] {
  if (raw === undefined || raw === null) return [];
  if (!Array.isArray(raw)) throw new RequestError('tools', 'type', `must be an array, got ${showValue(raw)}`);
  const seen = new Set<string>();
  return raw.map((t, i) => {
    const at = `tools[${i}]`;
    if (!isRecord(t) || t.type !== 'function' || !isRecord(t.function)) {
      throw new RequestError(at, 'type', `must be {"type": "function", "function": {...}}, got ${showValue(t)}`);
    }
    const f = t.function;
    if (typeof f.name !== 'string' || !NAME.test(f.name)) {
      throw new RequestError(
        `${at}.function.name`,
        'pattern',
        `must be 1-64 letters, digits, '_' or '-', got ${showValue(f.name)}`,
      );
    }
    if (seen.has(f.name))
      throw new RequestError(`${at}.function.name`, 'unique', `duplicate tool name ${showValue(f.name)}`);
    seen.add(f.name);
    if (f.description !== undefined && typeof f.description !== 'string') {
      throw new RequestError(`${at}.function.description`, 'type', `must be a string, got ${showValue(f.description)}`);
    }
    const parameters = f.parameters ?? { type: 'object', properties: {} };
    let schema: Schema;
    try {
      schema = parseSchema(parameters, `${at}.function.parameters`);
    } catch (e) {
      if (e instanceof IssueError) throw RequestError.fromSchemaIssue(e);
      throw e;
    }
    if (schema.types && (schema.types.length !== 1 || schema.types[0] !== 'object')) {
      throw new RequestError(
        `${at}.function.parameters.type`,
        'type',
        `must be "object", got ${showValue(schema.types)}`,
      );
    }
    schema.types = ['object'];
    const description = f.description as string | undefined;
    const fn = description === undefined ? { name: f.name, parameters } : { name: f.name, description, parameters };
    return { name: f.name, description, schema, openai: { type: 'function', function: fn } };
  });
}

/** Parses `tool_choice`; default "auto" with tools, "none" without. */
export function parseToolChoice(raw: unknown, tools: readonly ToolDef[]): ToolChoice {
  if (raw === undefined || raw === null) return { kind: tools.length > 0 ? 'auto' : 'none' };
  if (raw === 'none' || raw === 'auto' || raw === 'required') {
    if (raw === 'required' && tools.length === 0)
      throw new RequestError('tool_choice', 'tools', '"required" needs at least one tool in tools');
    return { kind: raw };
  }
  if (isRecord(raw) && raw.type === 'function' && isRecord(raw.function) && typeof raw.function.name === 'string') {
    const name = raw.function.name;
    if (!tools.some((t) => t.name === name)) {
      throw new RequestError(
        'tool_choice.function.name',
        'enum',
        `no tool named ${showValue(name)} in tools (${tools.map((t) => t.name).join(', ') || 'none'})`,
      );
    }
    return { kind: 'function', name };
  }
  throw new RequestError(
    'tool_choice',
    'enum',
    `must be "none", "auto", "required" or {"type": "function", "function": {"name": ...}}, got ${showValue(raw)}`,
  );
}
