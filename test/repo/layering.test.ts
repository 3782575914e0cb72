// The layers import downward only: robot/ never reaches into daemon/, serving code never into the
// transport, the benchmarks or the tools, and the file formats never into the engine. Reads the
// TypeScript sources, so a new upward import fails here before it ships.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { repoRoot } from '../../daemon/util/repo-root.js';

function sources(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) sources(p, out);
    else if (name.endsWith('.ts')) out.push(p);
  }
  return out;
}

/** Repo-relative targets of a file's relative imports (`import … from './x.js'`, `import('./x.js')`). */
function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const specs = [...text.matchAll(/(?:from\s+|import\s*\(\s*)'(\.{1,2}\/[^']+)'/g)].map((m) => m[1]!);
  return specs.map((s) => relative(repoRoot, resolve(dirname(file), s)));
}

const rules: { from: string; banned: string[] }[] = [
  { from: 'robot', banned: ['daemon'] },
  { from: 'daemon/engine', banned: ['daemon/api', 'daemon/bench', 'daemon/cli'] },
  { from: 'daemon/models', banned: ['daemon/engine', 'daemon/api', 'daemon/bench', 'daemon/tools'] },
  { from: 'daemon/robots', banned: ['daemon/api', 'daemon/bench', 'daemon/cli'] },
  { from: 'daemon/tools', banned: ['daemon/api', 'daemon/bench', 'daemon/cli'] },
];

for (const { from, banned } of rules) {
  test(`${from}/ imports nothing from ${banned.join(', ')}`, () => {
    const found: string[] = [];
    for (const file of sources(join(repoRoot, from))) {
      for (const target of importsOf(file)) {
        if (banned.some((b) => target === b || target.startsWith(`${b}/`))) {
          found.push(`${relative(repoRoot, file)} imports ${target}`);
        }
      }
    }
    assert.deepEqual(found, []);
  });
}

test('the import scanner sees relative imports and dynamic imports', () => {
  const file = join(repoRoot, 'daemon', 'compose.ts');
  const targets = importsOf(file);
  assert.ok(targets.includes('daemon/engine/demo-model.js'), targets.join('\n'));
});
