// The whole-token Metal decoder (native/metal/metal-decoder.cpp) on synthetic models: one command
// list per append (a prefill chunk or one token) through the shim device here (the system GPU with BRAINSTEM_TEST_METAL=gpu on a
// Mac), greedy tokens identical to the CPU reference kernels and logits within float tolerance.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { repoRoot } from '../../daemon/util/repo-root.js';
import { assertLikeCpu, type DecoderProbe, ropeScaled } from './helpers/decoder-cases.js';
import { assertDecoderRefusals } from './helpers/decoder-refusals.js';
import { synthTemp } from './helpers/model-files.js';

const binary = join(repoRoot, 'build', 'Release', 'brainstem-native-tests');

interface Probe extends DecoderProbe {
  appends: number;
  commits: number;
  tokens_metal: number[];
}

function probe(dir: string, tokens: number): Probe {
  const r = spawnSync(binary, ['--metal-decoder', dir, String(tokens)], { encoding: 'utf8', timeout: 600_000 });
  assert.equal(r.status, 0, `metal decoder probe failed:\n${r.stdout}\n${r.stderr}`);
  return JSON.parse(r.stdout) as Probe;
}

test('the Metal decoder prefills and decodes qwen3_moe, glm4_moe and the dense archs greedily like the CPU, one command list per append', (t) => {
  for (const arch of ['qwen3_moe', 'glm4_moe', 'qwen3', 'llama'] as const) {
    const dir = synthTemp(t, { arch, seed: 7 });
    const p = probe(dir, 7);
    assert.equal(p.commits, p.appends, `${arch}: one command list per append (the prompt, then each token)`);
    assertLikeCpu(p, p.tokens_metal, 7, arch);
  }
});

// Qwen3.5 (separate q/k/v, z, b, a projections) and Qwen3-Next (fused qkvz and ba): Gated DeltaNet
// layers with their recurrent state in a device buffer, output-gated attention with partial RoPE
// and the sigmoid-gated shared expert; bailing_moe_linear: lightning layers and a fused
// query_key_value; one command list per append.
test('the Metal decoder runs the hybrid models (Gated DeltaNet and lightning layers) greedily like the CPU, one command list per append', (t) => {
  for (const arch of ['qwen3_5_moe', 'qwen3_next', 'bailing_moe_linear'] as const) {
    const dir = synthTemp(t, { arch, seed: 7 });
    const p = probe(dir, 7);
    assert.equal(p.commits, p.appends, `${arch}: one command list per append`);
    assertLikeCpu(p, p.tokens_metal, 7, arch);
  }
});

// A vision model's text (multimodal RoPE with time = height = width: the 1-D rotation).
test("the Metal decoder decodes a vision model's text like the CPU", (t) => {
  const dir = synthTemp(t, { arch: 'qwen3_vl_moe', seed: 7 });
  const p = probe(dir, 5);
  assertLikeCpu(p, p.tokens_metal, 5);
});

// Llama 3.1's and Qwen3's YaRN frequency tables in place of θ^(−2i/rot) (YaRN's attention factor too).
test('the Metal decoder runs llama3 and yarn rope_scaling like the CPU', (t) => {
  for (const [kind, dir] of ropeScaled(t)) {
    const p = probe(dir, 7);
    assertLikeCpu(p, p.tokens_metal, 7, kind);
  }
});

test('the Metal decoder names what it does not cover (experts not in one stack)', (t) => {
  assertDecoderRefusals(t, binary, 'metal');
});
