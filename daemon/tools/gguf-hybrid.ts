// The hybrid part of the GGUF export (qwen3_5_moe → llama.cpp's `qwen35moe`, qwen3_next →
// `qwen3next`), with what llama.cpp's convert_hf_to_gguf does to these tensors: Gated DeltaNet
// projections become attn_qkv / attn_gate / ssm_{beta,alpha,ba,conv1d,dt,a,norm,out}, A_log is
// stored as ssm_a = −exp(A_log), and qwen35moe's value heads are reordered from grouped by key
// head (h = kh·r + j) to tiled (j·Hk + kh).
import type { GgmlType, GgufTensor, GgufValue } from './gguf-writer.js';
import { f32Bytes, type Order } from './gguf-export.js';
import type { RefConfig } from './reference/model-config.js';
import type { RefWeights } from './reference/weights.js';

type Mat = (name: string, path: string, experts?: number, type?: GgmlType, order?: Order) => void;

/** Model keys; the config's mrope_section goes in as llama.cpp's interleaved MRoPE
 *  sections (every slot must map to a position: text runs with equal T, H, W positions). */
export function hybridKv(c: RefConfig, a: string): [string, GgufValue][] {
  const L = c.linear!;
  const u32 = (value: number): GgufValue => ({ type: 'u32', value });
  let interval = 1;
  while (L.layers.has(interval - 1)) interval++;
  const section = c.mrope?.section ?? [11, 11, 10];
  const sections: [string, GgufValue][] =
    c.arch === 'qwen3_5_moe'
      ? [[`${a}.rope.dimension_sections`, { type: 'array', of: 'i32', value: [...section, 0] }]]
      : [];
  return [
    ...sections,
    [`${a}.expert_shared_feed_forward_length`, u32(L.sharedIntermediate)],
    [`${a}.ssm.conv_kernel`, u32(L.convKernel)],
    [`${a}.ssm.state_size`, u32(L.kDim)],
    [`${a}.ssm.group_count`, u32(L.kHeads)],
    [`${a}.ssm.time_step_rank`, u32(L.vHeads)],
    [`${a}.ssm.inner_size`, u32(L.vDim * L.vHeads)],
    [`${a}.full_attention_interval`, u32(interval)],
  ];
}

export function hybridTensors(c: RefConfig, w: RefWeights, out: GgufTensor[], mat: Mat, matType: GgmlType): void {
  const L = c.linear!;
  if (L.kDim !== L.vDim) throw new Error(`llama.cpp's ${c.arch} GGUF needs equal key and value head dims`);
  const r = L.vHeads / L.kHeads;
  // qwen35moe: tiled value head n = j·Hk + kh comes from grouped head kh·r + j; qwen3next keeps
  // the grouped order.
  const tiled = c.arch === 'qwen3_5_moe';
  const head = (n: number) => (tiled ? (n % L.kHeads) * r + Math.floor(n / L.kHeads) : n);
  const vRow = (d: number) => (i: number) => head(Math.floor(i / d)) * d + (i % d);
  const qk = 2 * L.kHeads * L.kDim;
  const floats = (name: string, values: () => ArrayLike<number>, dims: number[]) =>
    out.push({ name, dims, type: 'F32', chunks: () => [f32Bytes(values())] });
  const vec = (name: string, src: string, n: number, order = (i: number) => i, f = (x: number) => x) =>
    floats(name, () => {
      const v = w.floats(src);
      return Array.from({ length: n }, (_, i) => f(v[order(i)]!));
    }, [n]);

  mat('token_embd.weight', 'model.embed_tokens');
  for (let l = 0; l < c.layers; l++) {
    const p = `model.layers.${l}`;
    const b = `blk.${l}`;
    vec(`${b}.attn_norm.weight`, `${p}.input_layernorm.weight`, c.hidden);
    vec(`${b}.post_attention_norm.weight`, `${p}.post_attention_layernorm.weight`, c.hidden);
    if (L.layers.has(l)) {
      const a = `${p}.linear_attn`;
      const C = qk + L.vHeads * L.vDim;
      const K = L.convKernel;
      if (L.fused) {
        fusedProjections(c, b, a, mat, matType);
      } else {
        mat(`${b}.attn_qkv.weight`, `${a}.in_proj_qkv`, 0, matType, {
          row: (i) => (i < qk ? i : qk + vRow(L.vDim)(i - qk)),
        });
        mat(`${b}.attn_gate.weight`, `${a}.in_proj_z`, 0, matType, { row: vRow(L.vDim) });
        mat(`${b}.ssm_beta.weight`, `${a}.in_proj_b`, 0, matType, { row: vRow(1) });
        mat(`${b}.ssm_alpha.weight`, `${a}.in_proj_a`, 0, matType, { row: vRow(1) });
      }
      // conv1d [C, K, 1] (or [C, 1, K]): row-major c·K + k either way; GGUF dims [K, C].
      floats(`${b}.ssm_conv1d.weight`, () => {
        const src = w.floats(`${a}.conv1d.weight`);
        const dst = new Float64Array(C * K);
        for (let ch = 0; ch < C; ch++) {
          const from = ch < qk ? ch : qk + vRow(L.vDim)(ch - qk);
          dst.set(src.subarray(from * K, from * K + K), ch * K);
        }
        return dst;
      }, [K, C]);
      vec(`${b}.ssm_dt.bias`, `${a}.dt_bias`, L.vHeads, head);
      vec(`${b}.ssm_a`, `${a}.A_log`, L.vHeads, head, (x) => -Math.exp(x));
      vec(`${b}.ssm_norm.weight`, `${a}.norm.weight`, L.vDim);
      mat(`${b}.ssm_out.weight`, `${a}.out_proj`, 0, matType, { col: vRow(L.vDim) });
    } else {
      const a = `${p}.self_attn`;
      for (const [g, m] of [
        ['attn_q', 'q_proj'],
        ['attn_k', 'k_proj'],
        ['attn_v', 'v_proj'],
        ['attn_output', 'o_proj'],
      ])
        mat(`${b}.${g}.weight`, `${a}.${m}`);
      vec(`${b}.attn_q_norm.weight`, `${a}.q_norm.weight`, c.headDim);
      vec(`${b}.attn_k_norm.weight`, `${a}.k_norm.weight`, c.headDim);
    }
    mat(`${b}.ffn_gate_inp.weight`, `${p}.mlp.gate`, 0, 'F32');
    for (const g of ['gate', 'up', 'down']) {
      mat(`${b}.ffn_${g}_exps.weight`, `${p}.mlp.switch_mlp.${g}_proj`, c.experts);
      mat(`${b}.ffn_${g}_shexp.weight`, `${p}.mlp.shared_expert.${g}_proj`);
    }
    // The shared-expert gate [1, hidden] is one vector for llama.cpp.
    floats(`${b}.ffn_gate_inp_shexp.weight`, () => {
      const row = new Float64Array(c.hidden);
      w.matrix(`${p}.mlp.shared_expert_gate`).row(0, row);
      return row;
    }, [c.hidden]);
  }
  vec('output_norm.weight', 'model.norm.weight', c.hidden);
  if (!c.tied) mat('output.weight', 'lm_head');
}

/** qwen3_next's in_proj_qkvz (per k head [q | k | v·r | z·r]) as attn_qkv [q all | k all | v all]
 *  and attn_gate [z all]; in_proj_ba stays grouped as llama.cpp's ssm_ba. */
function fusedProjections(c: RefConfig, b: string, a: string, mat: Mat, matType: GgmlType): void {
  const { kHeads, vHeads, kDim, vDim } = c.linear!;
  const r = vHeads / kHeads;
  const group = 2 * kDim + 2 * r * vDim;
  const qk = kHeads * kDim;
  const v = (i: number) => {
    const h = Math.floor(i / vDim);
    return Math.floor(h / r) * group + 2 * kDim + (h % r) * vDim + (i % vDim);
  };
  const row = (i: number) =>
    i < 2 * qk ? Math.floor((i % qk) / kDim) * group + (i < qk ? 0 : kDim) + (i % kDim) : v(i - 2 * qk);
  mat(`${b}.attn_qkv.weight`, `${a}.in_proj_qkvz`, 0, matType, { row, rows: 2 * qk + vHeads * vDim });
  mat(`${b}.attn_gate.weight`, `${a}.in_proj_qkvz`, 0, matType, { row: (i) => v(i) + r * vDim, rows: vHeads * vDim });
  mat(`${b}.ssm_ba.weight`, `${a}.in_proj_ba`);
}
