// The one validation vocabulary: every checker (config, JSON-RPC params, tool calls, controller
// messages, robot descriptions) reports Issues, and every message is printed by formatIssue.
import { showValue } from './values.js';

export interface Issue {
  /** Where: a dotted path such as `server.port` or `points[3].q[2]`; '' is the value itself. */
  path: string;
  /** The broken rule in words, e.g. `must be an integer in 0..65535`. */
  rule: string;
  /** The offending value (undefined when it is missing). */
  value: unknown;
  /** What to do instead, e.g. `did you mean "port"?`. */
  hint?: string;
}

export interface FormatOptions {
  /** Prefix naming the whole value (`state`, `move_to`): `root.path`. */
  root?: string;
}

/** One line per issue: `path: rule (hint), got value`. */
export function formatIssue(issue: Issue, opts: FormatOptions = {}): string {
  const where = joinPath(opts.root ?? '', issue.path) || '(top level)';
  return `${where}: ${issueRule(issue)}`;
}

/** The issue without its path: `rule (hint), got value` (for errors that carry the path apart). */
export function issueRule(issue: Issue): string {
  const hint = issue.hint ? ` (${issue.hint})` : '';
  return `${issue.rule}${hint}, got ${showValue(issue.value)}`;
}

export function formatIssues(issues: readonly Issue[], opts: FormatOptions = {}): string {
  return issues.map((i) => formatIssue(i, opts)).join('; ');
}

/** A failed validation as an exception; the message lists every issue. */
export class IssueError extends Error {
  constructor(
    readonly issues: Issue[],
    opts: FormatOptions = {},
  ) {
    super(formatIssues(issues, opts));
    this.name = 'IssueError';
  }
}

/** `path.key`, or `path["key"]` when the key is not a plain name (empty, spaces, dots…). */
export function keyPath(path: string, key: string): string {
  return /^[\p{L}_$][\p{L}\p{N}_$-]*$/u.test(key) ? joinPath(path, key) : `${path}[${JSON.stringify(key)}]`;
}

function joinPath(root: string, path: string): string {
  if (!root) return path;
  if (!path) return root;
  return path.startsWith('[') ? root + path : `${root}.${path}`;
}
