// Runs every compiled test file (dist/**/*.test.js) with node:test.
// Usage: node test/run.mjs [substring ...]  — only files whose path contains a substring.
import { readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const dist = join(root, 'dist', 'test');

function walk(dir, out) {
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) walk(p, out);
    else if (name.endsWith('.test.js')) out.push(p);
  }
  return out;
}

const filters = process.argv.slice(2);
const files = walk(dist, [])
  .filter((f) => filters.length === 0 || filters.some((s) => relative(root, f).includes(s)))
  .sort();
if (files.length === 0) {
  console.error(`no test files matched in ${dist}`);
  process.exit(1);
}
const concurrency = process.env.BRAINSTEM_TEST_CONCURRENCY ?? '2';
const args = ['--test', `--test-concurrency=${concurrency}`, ...files];
if (!process.stdout.isTTY) args.splice(1, 0, '--test-reporter=tap');
const r = spawnSync(process.execPath, args, { stdio: 'inherit', cwd: root });
process.exit(r.status ?? 1);
