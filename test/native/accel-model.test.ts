// The accelerator kernel sets on synthetic models, each only where its device is usable (a Mac
// with a Metal GPU; a CUDA device of capability ≥ 7.2) and reported skipped with the reason
// elsewhere, where test-metal.cpp and test-cuda.cpp check the same kernels through the shim and
// the emulation: greedy decode through the set's table ends on the same token as through the
// reference kernels, on every expert path, and for the hybrids the decoders refuse.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { loadNative } from '../../daemon/native/binding.js';
import { repoRoot } from '../../daemon/util/repo-root.js';
import { synthTemp } from './helpers/model-files.js';

const binary = join(repoRoot, 'build', 'Release', 'brainstem-native-tests');
const info = loadNative().info();

function lastToken(dir: string, backend: string, tokens: number, path: string): number {
  const r = spawnSync(binary, ['--decode-probe', dir, backend, '1', String(tokens), path], {
    encoding: 'utf8',
    timeout: 300_000,
  });
  assert.equal(r.status, 0, `decode probe ${backend} ${path} failed:\n${r.stdout}\n${r.stderr}`);
  return (JSON.parse(r.stdout) as { last_token: number }).last_token;
}

for (const name of ['metal', 'cuda'] as const) {
  const set = info.kernelSets.find((k) => k.name === name);
  const device = info.backends.find((b) => b.name === name);
  test(`greedy decode on ${name} ends on the reference kernels’ token (qwen3_moe, glm4_moe; exact, staged, hot)`, {
    skip: set?.usable ? false : `${name} is not usable here: ${device?.detail ?? 'not compiled into this build'}`,
  }, (t) => {
    for (const arch of ['qwen3_moe', 'glm4_moe'] as const) {
      const dir = synthTemp(t, { arch, seed: 7 });
      for (const path of ['exact', 'staged', 'hot']) {
        assert.equal(
          lastToken(dir, name, 16, path),
          lastToken(dir, 'cpu-ref', 16, path),
          `${arch} ${path}: ${name} and cpu-ref diverge`,
        );
      }
    }
  });
  // Hybrids: both decoders run them whole (Gated DeltaNet and lightning layers on the device).
  test(`greedy decode of the hybrids on ${name} ends on the reference kernels’ token (qwen3_5_moe, bailing_moe_linear)`, {
    skip: set?.usable ? false : `${name} is not usable here: ${device?.detail ?? 'not compiled into this build'}`,
  }, (t) => {
    for (const arch of ['qwen3_5_moe', 'bailing_moe_linear'] as const) {
      const dir = synthTemp(t, { arch, seed: 7 });
      assert.equal(lastToken(dir, name, 16, 'exact'), lastToken(dir, 'cpu-ref', 16, 'exact'), `${arch}: diverges`);
    }
  });
}
