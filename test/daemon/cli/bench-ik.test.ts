import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { fixturePath } from '../../fixtures.js';

const MAIN = fileURLToPath(new URL('../../../daemon/main.js', import.meta.url));
// The first 60 oracle cases, so each CLI run parses a small file.
const DIR = mkdtempSync(join(tmpdir(), 'brainstem-bench-ik-'));
const CASES = join(DIR, 'cases.csv');
writeFileSync(CASES, readFileSync(fixturePath('oracles/ik-ur5e.csv'), 'utf8').split('\n').slice(0, 61).join('\n'));
after(() => rmSync(DIR, { recursive: true, force: true }));

function run(args: string[]): { code: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [MAIN, ...args], { encoding: 'utf8' });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

test('bench ik prints the JSON report', () => {
  const r = run(['bench', 'ik', '--robot', 'ur5e', '--cases', CASES, '--limit', '50', '--json']);
  assert.equal(r.code, 0, r.stderr);
  const report = JSON.parse(r.stdout);
  for (const key of ['cases', 'solved', 'solve_rate', 'median_us', 'p99_us'])
    assert.equal(typeof report[key], 'number', key);
  assert.equal(report.cases, 50);
  assert.equal(report.solved, 50);
  assert.equal(report.seed_mode, 'csv');
  assert.equal(report.restarts, false);
});

test('bench ik rejects bad arguments with readable errors', () => {
  const cases = CASES;
  const bad: [string[], RegExp][] = [
    [['--robot', 'nosuch', '--cases', cases], /robot "nosuch": config file: cannot be read, got ".*nosuch\.yaml"/],
    [['--robot', 'panda', '--cases', cases], /has 6 joints, robot "panda" has 7/],
    [['--robot', 'ur5e', '--cases', '/nonexistent.csv'], /cannot read --cases \/nonexistent\.csv/],
    [['--robot', 'ur5e', '--cases', cases, '--seed-mode', 'zero'], /--seed-mode must be csv or mid, got "zero"/],
    [['--robot', 'ur5e', '--cases', cases, '--budget-ms', '-1'], /--budget-ms must be a positive number, got "-1"/],
  ];
  for (const [args, pattern] of bad) {
    const r = run(['bench', 'ik', ...args]);
    assert.equal(r.code, 2, `${args.join(' ')}: exit ${r.code}`);
    assert.match(r.stderr, pattern);
    assert.doesNotMatch(r.stderr, /\n\s+at /, 'no stack trace');
  }
});
