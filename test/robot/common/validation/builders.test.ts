import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Prng } from '../../../../robot/common/prng.js';
import {
  anything,
  bool,
  int,
  leaves,
  list,
  num,
  obj,
  oneOf,
  optional,
  parseOrThrow,
  record,
  str,
} from '../../../../robot/common/validation/builders.js';
import { formatIssue, IssueError, type Issue } from '../../../../robot/common/validation/issue.js';

function issuesOf(node: { check(v: unknown, p: string, i: Issue[]): unknown }, value: unknown): Issue[] {
  const issues: Issue[] = [];
  node.check(value, '', issues);
  return issues;
}

test('int accepts exactly the integers in range (seeded property, 10k cases)', () => {
  const r = new Prng(11);
  const node = int({ min: -5, max: 300 });
  for (let i = 0; i < 10_000; i++) {
    const v = r.next() < 0.5 ? r.int(400) - 50 : r.uniform(-50, 350);
    const ok = Number.isInteger(v) && v >= -5 && v <= 300;
    assert.equal(issuesOf(node, v).length === 0, ok, `seed 11 case ${i}: value ${v}`);
  }
});

test('num accepts fractions but not NaN or Infinity', () => {
  const node = num({ min: 0 });
  assert.equal(issuesOf(node, 0.25).length, 0);
  for (const bad of [NaN, Infinity, -1, '1'])
    assert.match(issuesOf(node, bad)[0]!.rule, /must be a number >= 0/, String(bad));
});

test('defaults fill absent values; required leaves without default are reported', () => {
  const node = obj({ a: int({ default: 3 }), b: str(), c: optional(bool()) });
  const issues: Issue[] = [];
  assert.equal(node.check({ b: 'x' }, '', issues)?.a, 3);
  assert.deepEqual(issuesOf(node, {}), [{ path: 'b', rule: 'is required (string)', value: undefined }]);
  assert.deepEqual(parseOrThrow(node, { b: 'x' }), { a: 3, b: 'x', c: undefined });
});

test('record and list report the failing element by path', () => {
  const node = obj({ m: record(int()), l: list(oneOf(['a', 'b']), { maxItems: 3 }) });
  const issues = issuesOf(node, { m: { ok: 1, bad: 'x' }, l: ['a', 'c'] });
  assert.deepEqual(
    issues.map((i) => i.path),
    ['m.bad', 'l[1]'],
  );
  assert.match(issuesOf(node, { l: ['a', 'a', 'a', 'a'] })[0]!.rule, /must be a list with 0\.\.3 items/);
});

test('unknown keys get a suggestion when one is close, else the list of known keys', () => {
  const node = obj({ interval_ms: int({ default: 1 }), topic: str({ default: '' }) });
  assert.equal(issuesOf(node, { interval_mss: 1 })[0]!.hint, 'did you mean "interval_ms"?');
  assert.equal(issuesOf(node, { zzz: 1 })[0]!.hint, 'known: interval_ms, topic');
  assert.equal(
    formatIssue(issuesOf(node, { zzz: 1 })[0]!),
    'zzz: is not a known key (known: interval_ms, topic), got 1',
  );
});

test('anything passes values through but must be there; leaves() lists scalar paths of closed mappings only', () => {
  assert.deepEqual(issuesOf(anything(), [1, { a: 2 }]), []);
  assert.equal(formatIssue(issuesOf(obj({ call: anything() }), {})[0]!), 'call: is required (any), got nothing');
  assert.deepEqual(issuesOf(obj({ call: optional(anything()) }), {}), []);
  const node = obj({ a: obj({ b: int(), c: record(int()) }), d: str(), e: list(int()) });
  assert.deepEqual(
    leaves(node).map((l) => l.path),
    ['a.b', 'd'],
  );
});

test('formatIssue names path, rule and value; long values are shortened', () => {
  assert.equal(
    formatIssue({ path: 'server.port', rule: 'must be an integer', value: 'x' }),
    'server.port: must be an integer, got "x"',
  );
  assert.equal(formatIssue({ path: '', rule: 'must be a mapping', value: 1 }), '(top level): must be a mapping, got 1');
  assert.equal(formatIssue({ path: 'k', rule: 'r', value: undefined }), 'k: r, got nothing');
  assert.equal(
    formatIssue({ path: 'n', rule: 'r', value: Number.NaN, hint: 'h' }, { root: 'm' }),
    'm.n: r (h), got NaN',
  );
  const long = formatIssue({ path: 'k', rule: 'r', value: 'y'.repeat(500) });
  assert.ok(long.length < 120 && long.endsWith('...'), long);
  assert.throws(
    () => parseOrThrow(int(), 'q', 'n'),
    (e: unknown) => e instanceof IssueError && e.message === 'n: must be an integer, got "q"',
  );
});
