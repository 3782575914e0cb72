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
const onGpu = process.env.BRAINSTEM_TEST_METAL === 'gpu';

interface Probe extends DecoderProbe {
  appends: number;
  commits: number;
  tokens_metal: number[];
  layers: number;
  // Dispatches by kernel of the prompt's append and of the last decode step (on the shim).
  prefill_kernels: Record<string, number>;
  step_kernels: Record<string, number>;
}

function probe(dir: string, tokens: number, kv: 'f32' | 'f16' = 'f32'): Probe {
  const args = ['--metal-decoder', dir, String(tokens), ...(kv === 'f16' ? ['f16'] : [])];
  const r = spawnSync(binary, args, { encoding: 'utf8', timeout: 600_000 });
  assert.equal(r.status, 0, `metal decoder probe failed:\n${r.stdout}\n${r.stderr}`);
  return JSON.parse(r.stdout) as Probe;
}

// A MoE layer's routed rows combined (and its shared experts' output added) inside the residual
// add and the next norm: only the last layer's combine and adds stand alone.
function assertCombinesJoined(arch: string, p: Probe): void {
  const k = p.step_kernels;
  assert.ok((k.bs_moe_combine ?? 0) <= 1, `${arch}: a combine per layer: ${JSON.stringify(k)}`);
  assert.ok((k.bs_add ?? 0) <= 2, `${arch}: residual adds standing alone: ${JSON.stringify(k)}`);
}

test('the Metal decoder prefills and decodes qwen3_moe, glm4_moe and the dense archs greedily like the CPU, one command list per append', (t) => {
  for (const arch of ['qwen3_moe', 'glm4_moe', 'qwen3', 'llama'] as const) {
    const dir = synthTemp(t, { arch, seed: 7 });
    const p = probe(dir, 7);
    assert.equal(p.commits, p.appends, `${arch}: one command list per append (the prompt, then each token)`);
    assertLikeCpu(p, p.tokens_metal, 7, arch);
    if (!onGpu) {
      // Biases added inside the matmul set (glm4_moe's q, k, v): no dispatch for them, none per
      // token; the prompt's routed rows sorted by expert once per MoE layer (not a decode step's)
      // and its sorted tiles SiLU-gated in a dispatch of their own, where a decode step's down
      // projection reads SiLU(gate)·up itself.
      const { bs_route_sort: sorts = 0, bs_silu_mul: prefillGates = 0, ...rest } = p.prefill_kernels;
      const { bs_silu_mul: stepGates = 0, ...stepRest } = p.step_kernels;
      assert.deepEqual(rest, stepRest, `${arch}: the prompt queues what one token does`);
      assert.equal(sorts > 0, arch.endsWith('_moe'), `${arch}: ${sorts} sorts of the prompt's routed rows`);
      assert.equal(prefillGates, stepGates + sorts, `${arch}: SiLU-gate dispatches, prompt against step`);
      assert.equal(p.step_kernels.bs_add_rows ?? 0, 0, `${arch}: no bias dispatch: ${JSON.stringify(p.step_kernels)}`);
      // q and k rotated in bs_qk_norm_rope with or without the norms (glm4_moe, llama have none).
      assert.equal(p.step_kernels.bs_rope ?? 0, 0, `${arch}: no separate RoPE: ${JSON.stringify(p.step_kernels)}`);
      assertCombinesJoined(arch, p);
    }
  }
});

// Qwen3's steps joined (as the CUDA decoder's): each residual add into the next RMSNorm (a MoE
// layer's combine too), q/k norms + RoPE (+ the f16 store) in one dispatch per layer, q/k/v and
// gate/up as one matmul set each, SiLU-gate inside the down projection.
test('the Metal decoder joins the residual adds, the combine, q/k norm + RoPE, the f16 store and the matmuls over one x into fewer dispatches', (t) => {
  if (onGpu) return t.skip('dispatches are counted on the shim');
  const dir = synthTemp(t, { arch: 'qwen3_moe', seed: 7 });
  for (const kv of ['f32', 'f16'] as const) {
    const p = probe(dir, 4, kv);
    assertLikeCpu(p, p.tokens_metal, 4, kv);
    const k = p.step_kernels,
      L = p.layers;
    assert.equal(k.bs_qk_norm_rope, L, `${kv}: one q/k norm + RoPE per layer: ${JSON.stringify(k)}`);
    assert.equal(k.bs_rope ?? 0, 0, `${kv}: no separate RoPE`);
    assert.equal(k.bs_to_f16 ?? 0, 0, `${kv}: the cache store joined`);
    // The first layer's input norm, two joined per layer but the last, and the final norm.
    assert.equal(k.bs_rmsnorm, 2 * L + 1, `${kv}: ${JSON.stringify(k)}`);
    assert.equal(k.bs_add, 1, `${kv}: only the last layer's residual add stands alone`);
    assert.ok((k.bs_moe_combine ?? 0) <= 1, `${kv}: only the last layer's combine stands alone`);
    // q, k, v in one dispatch and the routed gate, up in another; the down projection SiLU-gates.
    assert.equal(k.bs_qmatmul_set, 2 * L, `${kv}: two matmul sets per layer: ${JSON.stringify(k)}`);
    assert.equal(k.bs_silu_mul ?? 0, 0, `${kv}: no SiLU-gate dispatch: ${JSON.stringify(k)}`);
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
    if (!onGpu) assertCombinesJoined(arch, p);
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
