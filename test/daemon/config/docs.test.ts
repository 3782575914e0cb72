// The documented defaults (configs/brainstem.yaml) and the README's configuration reference
// must agree with the schema: every key, its default and its environment name.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { envName } from '../../../daemon/config/env.js';
import { defaultConfigFile, readYamlFile } from '../../../daemon/config/load.js';
import { daemonSchema } from '../../../daemon/config/schema.js';
import { repoRoot } from '../../../daemon/native/binding.js';
import { leaves } from '../../../robot/common/validation/builders.js';

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

test('the README configuration reference lists every key with its environment variable', () => {
  const readme = readFileSync(join(repoRoot, 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('## Configuration'), readme.indexOf('## HTTP and WebSocket API'));
  for (const { path } of leaves(daemonSchema)) {
    assert.ok(section.includes(`\`${path}\``), `README ## Configuration lacks \`${path}\``);
    assert.ok(section.includes(`\`${envName(path)}\``), `README ## Configuration lacks \`${envName(path)}\``);
  }
});
