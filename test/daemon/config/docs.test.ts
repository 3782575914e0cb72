// The documented defaults (configs/brainstem.yaml) and docs/config.md must agree with the schema:
// every key, its default and its environment name.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { configDocs } from '../../../daemon/config/docs.js';
import { envName } from '../../../daemon/config/env.js';
import { defaultConfigFile, readYamlFile } from '../../../daemon/config/load.js';
import { daemonSchema } from '../../../daemon/config/schema.js';
import { repoRoot } from '../../../daemon/util/repo-root.js';
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

test('docs/config.md is the generator output (run `npm run docs:config` after changing the schema)', () => {
  const page = readFileSync(join(repoRoot, 'docs', 'config.md'), 'utf8');
  assert.equal(
    page,
    configDocs(),
    'docs/config.md differs from the generator; run `npm run -s build:ts && npm run docs:config`',
  );
});

test('docs/config.md lists every key with its environment variable and documents every key', () => {
  const page = configDocs();
  for (const { path, node } of leaves(daemonSchema)) {
    assert.ok(page.includes(`| \`${path}\` |`), `docs/config.md lacks \`${path}\``);
    assert.ok(page.includes(`\`${envName(path)}\``), `docs/config.md lacks \`${envName(path)}\``);
    assert.ok(node.info.doc, `${path} has no doc`);
  }
});
