// Test helper: tiny MLX-layout model folders (config.json + safetensors, optionally sharded
// with an index) with random but well-scaled quantised weights, and raw safetensors bytes
// whose header a test may edit to build malformed files.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Prng } from '../../../daemon/util/prng.js';

export interface RawTensor {
  name: string;
  dtype: string;
  shape: number[];
  data: Uint8Array;
}

/** A safetensors file: u64 LE header length, JSON header, data; editHeader may corrupt it. */
export function safetensorsBytes(
  tensors: readonly RawTensor[],
  editHeader?: (header: Record<string, { dtype: string; shape: number[]; data_offsets: number[] }>) => void,
): Buffer {
  const header: Record<string, { dtype: string; shape: number[]; data_offsets: number[] }> = {};
  let offset = 0;
  for (const t of tensors) {
    header[t.name] = { dtype: t.dtype, shape: t.shape, data_offsets: [offset, offset + t.data.length] };
    offset += t.data.length;
  }
  editHeader?.(header);
  const json = Buffer.from(JSON.stringify({ __metadata__: { format: 'mlx' }, ...header }), 'utf8');
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(json.length));
  return Buffer.concat([len, json, ...tensors.map((t) => Buffer.from(t.data.buffer, t.data.byteOffset, t.data.length))]);
}

function bf16(values: readonly number[]): Uint8Array {
  const f = new Float32Array(values);
  const u = new Uint32Array(f.buffer);
  const out = new Uint16Array(values.length);
  for (let i = 0; i < u.length; i++) out[i] = (u[i]! + 0x7fff + ((u[i]! >>> 16) & 1)) >>> 16;
  return new Uint8Array(out.buffer);
}

export type TinyArch = 'qwen3_moe' | 'glm4_moe';

export interface TinyModelOptions {
  arch: TinyArch;
  seed?: number;
  /** Write this many shards plus model.safetensors.index.json (default 1: model.safetensors). */
  shards?: number;
  tieWordEmbeddings?: boolean;
  /** glm4_moe: per-head q/k norm (GLM-4.5-Air has none). */
  useQkNorm?: boolean;
}

export interface TinyModel {
  config: Record<string, unknown>;
  tensors: RawTensor[];
}

/** Config and tensors of a 3-layer model (hidden 64, 8 experts, top-2, vocab 96). */
export function tinyModel(opts: TinyModelOptions): TinyModel {
  const rng = new Prng(opts.seed ?? 1);
  const d = 64, heads = 4, kvHeads = 2, headDim = 16, E = 8, moeInter = 32, inter = 96, vocab = 96, layers = 3;
  const tie = opts.tieWordEmbeddings ?? opts.arch === 'qwen3_moe';
  const glm = opts.arch === 'glm4_moe';
  const tensors: RawTensor[] = [];
  const vec = (name: string, n: number, mean: number, std: number) =>
    tensors.push({ name, dtype: 'BF16', shape: [n], data: bf16(Array.from({ length: n }, () => mean + std * rng.normal())) });
  // MLX affine: random codes; scales of both signs sized so a row has std ≈ gain/sqrt(in);
  // biases centre the codes so weights are roughly zero-mean.
  const linear = (path: string, lead: number[], out: number, inp: number, gain: number, bits = 4, group = 32) => {
    const rows = lead.reduce((a, b) => a * b, 1) * out;
    const codes = new Uint8Array((rows * inp * bits) / 8);
    for (let i = 0; i < codes.length; i++) codes[i] = rng.nextU32() & 0xff;
    const levels = 2 ** bits;
    const groups = rows * (inp / group);
    const scales: number[] = [];
    const biases: number[] = [];
    for (let g = 0; g < groups; g++) {
      const s = (gain / Math.sqrt(inp) / (levels / Math.sqrt(12))) * (rng.next() < 0.5 ? -1 : 1) * rng.uniform(0.7, 1.3);
      scales.push(s);
      biases.push(-s * ((levels - 1) / 2) + 0.01 * rng.normal());
    }
    tensors.push({ name: `${path}.weight`, dtype: 'U32', shape: [...lead, out, (inp * bits) / 32], data: codes });
    tensors.push({ name: `${path}.scales`, dtype: 'BF16', shape: [...lead, out, inp / group], data: bf16(scales) });
    tensors.push({ name: `${path}.biases`, dtype: 'BF16', shape: [...lead, out, inp / group], data: bf16(biases) });
  };
  const mlp = (p: string, width: number) => {
    linear(`${p}.gate_proj`, [], width, d, 1);
    linear(`${p}.up_proj`, [], width, d, 1);
    linear(`${p}.down_proj`, [], d, width, 0.5);
  };

  linear('model.embed_tokens', [], vocab, d, tie ? 3 : 1);
  const moe = (l: number) => (glm ? l >= 1 : l !== 1);
  for (let l = 0; l < layers; l++) {
    const p = `model.layers.${l}`;
    vec(`${p}.input_layernorm.weight`, d, 1, 0.1);
    vec(`${p}.post_attention_layernorm.weight`, d, 1, 0.1);
    for (const [name, out] of [['q_proj', heads * headDim], ['k_proj', kvHeads * headDim], ['v_proj', kvHeads * headDim]] as const) {
      linear(`${p}.self_attn.${name}`, [], out, d, 1);
      if (glm) vec(`${p}.self_attn.${name}.bias`, out, 0, 0.1);
    }
    linear(`${p}.self_attn.o_proj`, [], d, heads * headDim, 0.5);
    if (!glm || opts.useQkNorm) {
      vec(`${p}.self_attn.q_norm.weight`, headDim, 1, 0.1);
      vec(`${p}.self_attn.k_norm.weight`, headDim, 1, 0.1);
    }
    if (!moe(l)) {
      mlp(`${p}.mlp`, inter);
      continue;
    }
    if (glm) {
      const w = Array.from({ length: E * d }, () => (1.5 / Math.sqrt(d)) * rng.normal());
      tensors.push({ name: `${p}.mlp.gate.weight`, dtype: 'BF16', shape: [E, d], data: bf16(w) });
      const bias = new Float32Array(Array.from({ length: E }, () => 0.05 * rng.normal()));
      tensors.push({ name: `${p}.mlp.gate.e_score_correction_bias`, dtype: 'F32', shape: [E], data: new Uint8Array(bias.buffer) });
      mlp(`${p}.mlp.shared_experts`, moeInter);
    } else {
      linear(`${p}.mlp.gate`, [], E, d, 1.5, 8, 64);
    }
    linear(`${p}.mlp.switch_mlp.gate_proj`, [E], moeInter, d, 1);
    linear(`${p}.mlp.switch_mlp.up_proj`, [E], moeInter, d, 1);
    linear(`${p}.mlp.switch_mlp.down_proj`, [E], d, moeInter, 0.5);
  }
  vec('model.norm.weight', d, 1, 0.1);
  if (!tie) linear('lm_head', [], vocab, d, 3);

  const quantization: Record<string, unknown> = { group_size: 32, bits: 4, mode: 'affine' };
  const common = {
    model_type: opts.arch, vocab_size: vocab, hidden_size: d, intermediate_size: inter, moe_intermediate_size: moeInter,
    num_hidden_layers: layers, num_attention_heads: heads, num_key_value_heads: kvHeads, head_dim: headDim,
    rms_norm_eps: 1e-6, rope_theta: 10000, max_position_embeddings: 256, tie_word_embeddings: tie,
    num_experts_per_tok: 2, norm_topk_prob: true, bos_token_id: 1, eos_token_id: [2, 3],
  };
  let config: Record<string, unknown>;
  if (glm) {
    config = {
      ...common, partial_rotary_factor: 0.5, attention_bias: true, use_qk_norm: opts.useQkNorm ?? false,
      n_routed_experts: E, n_shared_experts: 1, n_group: 2, topk_group: 1, routed_scaling_factor: 2.5,
      first_k_dense_replace: 1, scoring_func: 'sigmoid', topk_method: 'noaux_tc', rope_scaling: null,
    };
  } else {
    for (let l = 0; l < layers; l++) if (moe(l)) quantization[`model.layers.${l}.mlp.gate`] = { group_size: 64, bits: 8 };
    config = { ...common, num_experts: E, decoder_sparse_step: 1, mlp_only_layers: [1] };
  }
  config.quantization = quantization;
  config.quantization_config = quantization;
  return { config, tensors };
}

/** Writes a tiny model folder; returns what was written. */
export function writeTinyModel(dir: string, opts: TinyModelOptions, model: TinyModel = tinyModel(opts)): TinyModel {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'config.json'), JSON.stringify(model.config, null, 2));
  const shards = opts.shards ?? 1;
  if (shards === 1) {
    writeFileSync(join(dir, 'model.safetensors'), safetensorsBytes(model.tensors));
    return model;
  }
  const weightMap: Record<string, string> = {};
  const per = Math.ceil(model.tensors.length / shards);
  for (let s = 0; s < shards; s++) {
    const name = `model-${String(s + 1).padStart(5, '0')}-of-${String(shards).padStart(5, '0')}.safetensors`;
    const part = model.tensors.slice(s * per, (s + 1) * per);
    for (const t of part) weightMap[t.name] = name;
    writeFileSync(join(dir, name), safetensorsBytes(part));
  }
  writeFileSync(join(dir, 'model.safetensors.index.json'), JSON.stringify({ metadata: {}, weight_map: weightMap }, null, 2));
  return model;
}
