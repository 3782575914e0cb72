// A request the engine cannot serve as given: names the field, the rule and the value, so the API
// layer can answer 400 with a message the client can act on.
import { issueRule, type IssueError } from '../../robot/common/validation/issue.js';
import { showValue } from '../../robot/common/validation/values.js';

export class RequestError extends Error {
  constructor(
    readonly field: string,
    readonly rule: string,
    message: string,
  ) {
    super(`${field}: ${message}`);
    this.name = 'RequestError';
  }

  /** A client schema that is not one (tools[i].function.parameters, response_format): rule "schema". */
  static fromSchemaIssue(e: IssueError): RequestError {
    const issue = e.issues[0]!;
    return new RequestError(issue.path, 'schema', issueRule(issue));
  }
}

/** Reads an optional finite number within [min, max]; throws RequestError otherwise. */
export function numberField(
  value: unknown,
  field: string,
  min: number,
  max: number,
  opts: { integer?: boolean } = {},
): number | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'number' || !Number.isFinite(value))
    throw new RequestError(field, 'type', `must be a number, got ${showValue(value)}`);
  if (opts.integer && !Number.isInteger(value))
    throw new RequestError(field, 'integer', `must be an integer, got ${showValue(value)}`);
  if (value < min || value > max)
    throw new RequestError(field, 'range', `must be in [${min}, ${max}], got ${showValue(value)}`);
  return value;
}
