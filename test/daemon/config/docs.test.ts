// The documented defaults (configs/brainstem.yaml) and the configuration reference (docs/config.md)
// must agree with the schema: every key, its default and its environment name.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { envName } from '../../../daemon/config/env.js';
import { defaultConfigFile, readYamlFile } from '../../../daemon/config/load.js';
import { daemonSchema } from '../../../daemon/config/schema.js';
import { repoRoot } from '../../../daemon/util/repo-root.js';
import { leaves } from '../../../daemon/util/schema.js';

const get = (tree: Record<string, any>, path: string) => path.split('.').reduce((o, k) => o?.[k], tree);

test('configs/brainstem.yaml sets every scalar key to its schema default', () => {
  const file = readYamlFile(defaultConfigFile);
  for (const { path, node } of leaves(daemonSchema)) {
    assert.deepEqual(get(file, path), node.info.default, `${path} in ${defaultConfigFile}`);
  }
});

test('configs/brainstem.yaml documents every key with a comment', () => {
  const lines = readFileSync(defaultConfigFile, 'utf8').split('\n');
  for (const { path } of leaves(daemonSchema)) {
    const key = path.split('.').pop()!;
    const at = lines.findIndex((l) => new RegExp(`^\\s*${key}:`).test(l));
    assert.ok(at > 0 && /^\s*#/.test(lines[at - 1]!), `${path} needs a comment line above it`);
  }
});

test('docs/config.md lists every key with its environment variable', () => {
  const reference = readFileSync(join(repoRoot, 'docs', 'config.md'), 'utf8');
  for (const { path } of leaves(daemonSchema)) {
    assert.ok(reference.includes(`\`${path}\``), `docs/config.md lacks \`${path}\``);
    assert.ok(reference.includes(`\`${envName(path)}\``), `docs/config.md lacks \`${envName(path)}\``);
  }
});
