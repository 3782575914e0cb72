// Hermes / Qwen2.5 / Qwen3 tool calls: `<tool_call>{"name": ..., "arguments": ...}</tool_call>`,
// arguments as an object or as a JSON string holding one.
import { isRecord, showValue } from '../../../robot/common/validation/values.js';
import { ToolCallError } from './errors.js';

export interface HermesCall {
  name: string;
  arguments: Record<string, unknown>;
}

/** Parses the JSON between the tags; `raw` is the whole call text for error reports. */
export function parseHermesBody(body: string, raw: string): HermesCall {
  let v: unknown;
  try {
    v = JSON.parse(body);
  } catch (e) {
    throw new ToolCallError(
      'invalid_json',
      `the tool call is not valid JSON (${(e as Error).message}): ${showValue(body)}`,
      raw,
    );
  }
  if (!isRecord(v))
    throw new ToolCallError('invalid_call', `the tool call must be a JSON object, got ${showValue(v)}`, raw);
  const extra = Object.keys(v).filter((k) => k !== 'name' && k !== 'arguments');
  if (extra.length > 0)
    throw new ToolCallError(
      'invalid_call',
      `unexpected keys in the tool call: ${extra.join(', ')} (only "name" and "arguments")`,
      raw,
    );
  if (typeof v.name !== 'string' || v.name === '')
    throw new ToolCallError('invalid_call', `the tool call needs a "name" string, got ${showValue(v.name)}`, raw);
  if (!('arguments' in v))
    throw new ToolCallError('invalid_call', `the call of ${v.name} has no "arguments"`, raw, v.name);
  let args = v.arguments;
  if (typeof args === 'string') {
    try {
      args = JSON.parse(args);
    } catch (e) {
      throw new ToolCallError(
        'invalid_json',
        `the arguments string of ${v.name} is not valid JSON (${(e as Error).message}): ${showValue(v.arguments)}`,
        raw,
        v.name,
      );
    }
  }
  if (!isRecord(args))
    throw new ToolCallError(
      'invalid_arguments',
      `the arguments of ${v.name} must be a JSON object, got ${showValue(args)}`,
      raw,
      v.name,
    );
  return { name: v.name, arguments: args };
}
