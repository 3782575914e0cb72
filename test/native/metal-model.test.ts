// The Metal kernel set on a synthetic model (macOS with a Metal GPU only; skipped elsewhere,
// where test-metal.cpp checks the same kernels through the shim): greedy decode through the
// 'metal' table ends on the same token as through the reference kernels.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { loadNative } from '../../daemon/native/binding.js';
import { repoRoot } from '../../daemon/util/repo-root.js';
import { synthTemp } from './helpers/model-files.js';

const binary = join(repoRoot, 'build', 'Release', 'brainstem-native-tests');
const metal = loadNative()
  .info()
  .kernelSets.find((k) => k.name === 'metal');

function lastToken(dir: string, backend: string, tokens: number): number {
  const r = spawnSync(binary, ['--decode-probe', dir, backend, '1', String(tokens)], {
    encoding: 'utf8',
    timeout: 300_000,
  });
  assert.equal(r.status, 0, `decode probe ${backend} failed:\n${r.stdout}\n${r.stderr}`);
  return (JSON.parse(r.stdout) as { last_token: number }).last_token;
}

test('greedy decode on Metal ends on the reference kernels’ token (qwen3_moe, glm4_moe)', {
  skip: metal?.usable ? false : 'Metal is not usable here (macOS builds with a Metal GPU only)',
}, (t) => {
  for (const arch of ['qwen3_moe', 'glm4_moe'] as const) {
    const dir = synthTemp(t, { arch, seed: 7 });
    assert.equal(lastToken(dir, 'metal', 16), lastToken(dir, 'cpu-ref', 16), `${arch}: metal and cpu-ref diverge`);
  }
});
