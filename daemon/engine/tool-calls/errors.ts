// A tool call the model got wrong. The API reports it as an error; it is never passed off as a
// plain text reply.
import type { Issue } from '../../../robot/common/validation/issue.js';

export type ToolCallErrorCode =
  /** The output ended inside a call (`<tool_call>` or `<function=` never closed). */
  | 'unclosed_tag'
  /** A closing tag with no call open. */
  | 'unexpected_tag'
  /** The Hermes body is not one JSON object. */
  | 'invalid_json'
  /** The call's structure is wrong (missing name, extra keys, text around the call, bad XML). */
  | 'invalid_call'
  | 'unknown_tool'
  /** Arguments that do not coerce to or validate against the tool's schema. */
  | 'invalid_arguments';

export class ToolCallError extends Error {
  constructor(
    readonly code: ToolCallErrorCode,
    message: string,
    /** The model's text for the call, as far as it got. */
    readonly raw: string,
    readonly tool?: string,
    readonly issues: Issue[] = [],
  ) {
    super(message);
    this.name = 'ToolCallError';
  }
}
