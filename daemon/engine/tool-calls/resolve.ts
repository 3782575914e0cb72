// A parsed call → a call of a known tool with arguments that validate against its schema
// (XML parameters coerced by that schema first).
import { type Issue, formatIssue, formatIssues, keyPath } from '../../../robot/common/validation/issue.js';
import { validateJson } from '../json-schema/validate.js';
import { coerceParameter } from './coerce.js';
import { ToolCallError } from './errors.js';
import type { HermesCall } from './hermes.js';
import type { ToolDef } from './tools.js';
import type { XmlCall } from './xml.js';

export interface ToolCall {
  name: string;
  arguments: Record<string, unknown>;
  /** Which layout the model used. */
  format: 'hermes' | 'xml';
}

export function resolveCall(call: HermesCall | XmlCall, tools: readonly ToolDef[], raw: string): ToolCall {
  const tool = tools.find((t) => t.name === call.name);
  if (!tool) {
    throw new ToolCallError(
      'unknown_tool',
      `unknown tool ${JSON.stringify(call.name)} (available: ${tools.map((t) => t.name).join(', ') || 'none'})`,
      raw,
      call.name,
    );
  }
  let args: Record<string, unknown>;
  if ('params' in call) {
    args = {};
    for (const [p, text] of call.params) {
      const declared = tool.schema.properties?.find(([k]) => k === p)?.[1];
      const extra = typeof tool.schema.additionalProperties === 'object' ? tool.schema.additionalProperties : undefined;
      const r = coerceParameter(text, declared ?? extra);
      if (!r.ok) {
        const issue: Issue = { path: keyPath('$', p), rule: r.rule, value: text };
        throw new ToolCallError('invalid_arguments', `${call.name}: ${formatIssue(issue)}`, raw, call.name, [issue]);
      }
      args[p] = r.value;
    }
  } else args = call.arguments;
  const issues = validateJson(args, tool.schema);
  if (issues.length > 0)
    throw new ToolCallError('invalid_arguments', `${call.name}: ${formatIssues(issues)}`, raw, call.name, issues);
  return { name: call.name, arguments: args, format: 'params' in call ? 'xml' : 'hermes' };
}
