// Converts an MLX folder into GGUF for llama.cpp: qwen3_moe / glm4_moe / qwen3 / llama as
// `qwen3moe` / `glm4moe` / `qwen3` / `llama` (the hybrids in gguf-hybrid.ts),
// with the metadata keys and tensor names of llama.cpp's convert_hf_to_gguf.py: weights are
// dequantised to F32/F16 (or requantised to Q4_0 / Q8_0); norms, biases and routers stay F32.
// The tokenizer goes in as llama.cpp's "gpt2" BPE with the "qwen2" pre-tokenizer.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { numberToF16 } from '../models/float16.js';
import {
  GGML_TYPES,
  quantizeRowQ4_0,
  quantizeRowQ8_0,
  writeGguf,
  type GgmlType,
  type GgufTensor,
  type GgufValue,
} from './gguf-writer.js';
import { readRefConfig, type RefConfig } from './reference/model-config.js';
import { RefWeights } from './reference/weights.js';
import { hybridKv, hybridTensors } from './gguf-hybrid.js';

export const GGUF_TYPES = ['f32', 'f16', 'q4_0', 'q8_0'] as const;
export type GgufFileType = (typeof GGUF_TYPES)[number];

const FILE_TYPE: Record<GgufFileType, { ggml: GgmlType; fileType: number }> = {
  f32: { ggml: 'F32', fileType: 0 },
  f16: { ggml: 'F16', fileType: 1 },
  q4_0: { ggml: 'Q4_0', fileType: 2 },
  q8_0: { ggml: 'Q8_0', fileType: 7 },
};

const TOKEN_TYPE = { normal: 1, control: 3, userDefined: 4, unused: 5 };

const GGUF_ARCH: Partial<Record<RefConfig['arch'], string>> = {
  qwen3_moe: 'qwen3moe',
  qwen3_5_moe: 'qwen35moe',
  qwen3_next: 'qwen3next',
  glm4_moe: 'glm4moe',
  qwen3: 'qwen3',
  llama: 'llama',
};

export function ggufArchName(c: RefConfig): string {
  const a = GGUF_ARCH[c.arch];
  if (!a) throw new Error(`GGUF export covers ${Object.keys(GGUF_ARCH).join(', ')}, not ${c.arch}`);
  return a;
}

/** Writes `<mlxDir>`'s model as one GGUF file; returns its size in bytes. */
export function exportGguf(
  mlxDir: string,
  outFile: string,
  type: GgufFileType,
  name = 'brainstem synthetic model',
): number {
  const c = readRefConfig(mlxDir);
  ggufArchName(c);
  if (c.ropeInvFreq) throw new Error('GGUF export does not write rope_scaling (llama3 / linear); config.json has one');
  if (c.arch === 'qwen3_moe' && c.denseLayers.size > 0) {
    throw new Error(
      `llama.cpp's qwen3moe has no dense layers, but config.json makes layers ${[...c.denseLayers].join(', ')} dense`,
    );
  }
  const w = RefWeights.open(mlxDir, c, false); // stream: keep nothing, read experts one by one
  try {
    for (const bias of ['self_attn.o_proj.bias', 'mlp.gate_proj.bias']) {
      if (w.has(`model.layers.0.${bias}`)) throw new Error(`GGUF export does not write ${bias} (llama biases)`);
    }
    const kv = new Map<string, GgufValue>([...modelKv(c, name, type), ...tokenizerKv(mlxDir, c)]);
    return writeGguf(outFile, kv, tensorPlan(c, w, FILE_TYPE[type].ggml));
  } finally {
    w.close();
  }
}

function modelKv(c: RefConfig, name: string, type: GgufFileType): [string, GgufValue][] {
  const a = ggufArchName(c);
  const u32 = (value: number): GgufValue => ({ type: 'u32', value });
  const f32 = (value: number): GgufValue => ({ type: 'f32', value });
  const kv: [string, GgufValue][] = [
    ['general.architecture', { type: 'string', value: a }],
    ['general.type', { type: 'string', value: 'model' }],
    ['general.name', { type: 'string', value: name }],
    ['general.file_type', u32(FILE_TYPE[type].fileType)],
    ['general.quantization_version', u32(2)],
    [`${a}.block_count`, u32(c.layers)],
    [`${a}.context_length`, u32(c.maxPositions)],
    [`${a}.embedding_length`, u32(c.hidden)],
    [`${a}.feed_forward_length`, u32(c.intermediate)],
    [`${a}.attention.head_count`, u32(c.heads)],
    [`${a}.attention.head_count_kv`, u32(c.kvHeads)],
    [`${a}.attention.key_length`, u32(c.headDim)],
    [`${a}.attention.value_length`, u32(c.headDim)],
    [`${a}.attention.layer_norm_rms_epsilon`, f32(c.rmsEps)],
    [`${a}.rope.freq_base`, f32(c.ropeTheta)],
    [`${a}.rope.dimension_count`, u32(c.rotaryDims)],
  ];
  if (c.linear) kv.push(...hybridKv(c, a));
  if (c.experts > 0) {
    kv.push(
      [`${a}.expert_count`, u32(c.experts)],
      [`${a}.expert_used_count`, u32(c.topK)],
      [`${a}.expert_feed_forward_length`, u32(c.moeIntermediate)],
    );
  }
  if (c.arch === 'glm4_moe') {
    kv.push(
      [`${a}.expert_shared_count`, u32(c.sharedExperts)],
      [`${a}.leading_dense_block_count`, u32(c.denseLayers.size)],
      [`${a}.expert_gating_func`, u32(2)], // LLAMA_EXPERT_GATING_FUNC_TYPE_SIGMOID
      [`${a}.expert_weights_scale`, f32(c.routedScaling)],
      [`${a}.expert_weights_norm`, { type: 'bool', value: c.normTopK }],
      [`${a}.nextn_predict_layers`, u32(0)], // MLX folders carry no MTP layer
    );
    if (c.nGroup > 1)
      kv.push([`${a}.expert_group_count`, u32(c.nGroup)], [`${a}.expert_group_used_count`, u32(c.topkGroup)]);
  }
  return kv;
}

function tokenizerKv(dir: string, c: RefConfig): [string, GgufValue][] {
  const tj = JSON.parse(readFileSync(join(dir, 'tokenizer.json'), 'utf8'));
  const tc = JSON.parse(readFileSync(join(dir, 'tokenizer_config.json'), 'utf8'));
  const cfg = JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8'));
  const tokens: string[] = Array.from({ length: c.vocabSize }, (_, i) => `[PAD${i}]`);
  const types: number[] = new Array(c.vocabSize).fill(TOKEN_TYPE.unused);
  const ids = new Map<string, number>();
  const put = (text: string, id: number, type: number): void => {
    if (id >= c.vocabSize) throw new Error(`tokenizer id ${id} (${text}) is outside vocab_size ${c.vocabSize}`);
    tokens[id] = text;
    types[id] = type;
    ids.set(text, id);
  };
  for (const [text, id] of Object.entries(tj.model.vocab as Record<string, number>)) put(text, id, TOKEN_TYPE.normal);
  for (const t of tj.added_tokens as { id: number; content: string; special: boolean }[]) {
    // Like convert_hf_to_gguf: special or "<|...|>"-looking added tokens are control tokens.
    const control = t.special || (t.content.startsWith('<|') && t.content.endsWith('|>'));
    put(t.content, t.id, control ? TOKEN_TYPE.control : TOKEN_TYPE.userDefined);
  }
  const merges = (tj.model.merges as (string | [string, string])[]).map((m) => (Array.isArray(m) ? m.join(' ') : m));
  const idOf = (key: string): number => {
    const id = ids.get(tc[key]);
    if (id === undefined) throw new Error(`tokenizer_config.json ${key} ${JSON.stringify(tc[key])} is not a token`);
    return id;
  };
  const eos = idOf('eos_token');
  const pad = idOf('pad_token');
  return [
    ['tokenizer.ggml.model', { type: 'string', value: 'gpt2' }],
    ['tokenizer.ggml.pre', { type: 'string', value: 'qwen2' }],
    ['tokenizer.ggml.tokens', { type: 'array', of: 'string', value: tokens }],
    ['tokenizer.ggml.token_type', { type: 'array', of: 'i32', value: types }],
    ['tokenizer.ggml.merges', { type: 'array', of: 'string', value: merges }],
    ['tokenizer.ggml.eos_token_id', { type: 'u32', value: eos }],
    ['tokenizer.ggml.padding_token_id', { type: 'u32', value: pad }],
    [
      'tokenizer.ggml.bos_token_id',
      { type: 'u32', value: typeof cfg.bos_token_id === 'number' ? cfg.bos_token_id : pad },
    ],
    ['tokenizer.ggml.add_bos_token', { type: 'bool', value: tc.add_bos_token === true }],
    ['tokenizer.chat_template', { type: 'string', value: String(tc.chat_template ?? '') }],
  ];
}

/** GGUF tensors in llama.cpp's names, each streaming dequantised rows of its MLX module. */
function tensorPlan(c: RefConfig, w: RefWeights, matType: GgmlType): GgufTensor[] {
  const out: GgufTensor[] = [];
  const vec = (name: string, src: string) =>
    out.push({ name, dims: w.st.info(c.prefix + src).shape, type: 'F32', chunks: () => [f32Bytes(w.floats(src))] });
  const mat = (name: string, path: string, experts = 0, type = matType, order: Order = {}) => {
    const m = w.dims(path, experts > 0);
    const rows = order.rows ?? m.rows;
    const dims = experts > 0 ? [m.cols, rows, experts] : [m.cols, rows];
    out.push({ name, dims, type, chunks: () => matrixRows(w, path, experts, type, order) });
  };
  // llama.cpp's llama ropes interleaved pairs: convert_hf_to_gguf permutes q/k rows per head.
  const ropeOrder = (m: string): Order => {
    const heads = c.arch !== 'llama' ? 0 : m === 'q_proj' ? c.heads : m === 'k_proj' ? c.kvHeads : 0;
    const d = c.headDim;
    return heads === 0 ? {} : { row: (r) => r - (r % d) + ((r % d) % 2) * (d / 2) + Math.floor((r % d) / 2) };
  };
  if (c.linear) {
    hybridTensors(c, w, out, mat, matType);
    return out;
  }
  mat('token_embd.weight', 'model.embed_tokens');
  for (let l = 0; l < c.layers; l++) {
    const p = `model.layers.${l}`;
    const b = `blk.${l}`;
    vec(`${b}.attn_norm.weight`, `${p}.input_layernorm.weight`);
    for (const [g, m] of [
      ['attn_q', 'q_proj'],
      ['attn_k', 'k_proj'],
      ['attn_v', 'v_proj'],
    ]) {
      mat(`${b}.${g}.weight`, `${p}.self_attn.${m}`, 0, matType, ropeOrder(m));
      if (w.has(`${p}.self_attn.${m}.bias`)) vec(`${b}.${g}.bias`, `${p}.self_attn.${m}.bias`);
    }
    mat(`${b}.attn_output.weight`, `${p}.self_attn.o_proj`);
    if (c.qkNorm) {
      vec(`${b}.attn_q_norm.weight`, `${p}.self_attn.q_norm.weight`);
      vec(`${b}.attn_k_norm.weight`, `${p}.self_attn.k_norm.weight`);
    }
    vec(
      `${b}.${c.arch === 'glm4_moe' ? 'post_attention_norm' : 'ffn_norm'}.weight`,
      `${p}.post_attention_layernorm.weight`,
    );
    const ffn = (suffix: string, mlp: string) => {
      for (const [g, m] of [
        ['gate', 'gate_proj'],
        ['up', 'up_proj'],
        ['down', 'down_proj'],
      ])
        mat(`${b}.ffn_${g}${suffix}.weight`, `${p}.${mlp}.${m}`);
    };
    if (c.denseLayers.has(l)) {
      ffn('', 'mlp');
      continue;
    }
    mat(`${b}.ffn_gate_inp.weight`, `${p}.mlp.gate`, 0, 'F32'); // routers stay F32, as convert_hf_to_gguf keeps them
    if (c.arch === 'glm4_moe') vec(`${b}.exp_probs_b.bias`, `${p}.mlp.gate.e_score_correction_bias`);
    for (const [g, m] of [
      ['gate', 'gate_proj'],
      ['up', 'up_proj'],
      ['down', 'down_proj'],
    ]) {
      mat(`${b}.ffn_${g}_exps.weight`, `${p}.mlp.switch_mlp.${m}`, c.experts);
    }
    if (c.sharedExperts > 0) ffn('_shexp', 'mlp.shared_experts');
  }
  vec('output_norm.weight', 'model.norm.weight');
  if (!c.tied) mat('output.weight', 'lm_head');
  return out;
}

export function f32Bytes(v: ArrayLike<number>): Uint8Array {
  return new Uint8Array(Float32Array.from(v).buffer);
}

/** Where GGUF row r / column i of a matrix comes from (default: the same index). */
export interface Order {
  row?: (r: number) => number;
  col?: (i: number) => number;
  /** Rows written (default: the module's), for a part of a fused module. */
  rows?: number;
}

/** Rows in GGUF order, each streamed from its source row (and columns) of the MLX module. */
export function* matrixRows(
  w: RefWeights,
  path: string,
  experts: number,
  type: GgmlType,
  order: Order = {},
): Generator<Uint8Array> {
  for (let e = 0; e < Math.max(1, experts); e++) {
    const m = w.matrix(path, experts > 0 ? e : undefined);
    const source = order.row ?? ((r: number) => r);
    const col = order.col;
    const src = new Float64Array(col ? m.cols : 0);
    const rowBytes = (m.cols / GGML_TYPES[type].block) * GGML_TYPES[type].bytes;
    const rowsPerChunk = Math.max(1, Math.floor((4 << 20) / rowBytes));
    const row = new Float64Array(m.cols);
    const rows = order.rows ?? m.rows;
    for (let r0 = 0; r0 < rows; r0 += rowsPerChunk) {
      const n = Math.min(rowsPerChunk, rows - r0);
      const buf = new Uint8Array(n * rowBytes);
      const view = new DataView(buf.buffer);
      for (let r = 0; r < n; r++) {
        if (col) {
          m.row(source(r0 + r), src);
          for (let i = 0; i < m.cols; i++) row[i] = src[col(i)]!;
        } else {
          m.row(source(r0 + r), row);
        }
        const o = r * rowBytes;
        if (type === 'F32') for (let i = 0; i < m.cols; i++) view.setFloat32(o + 4 * i, row[i], true);
        else if (type === 'F16') for (let i = 0; i < m.cols; i++) view.setUint16(o + 2 * i, numberToF16(row[i]), true);
        else if (type === 'Q8_0') quantizeRowQ8_0(row, buf.subarray(o, o + rowBytes), numberToF16);
        else quantizeRowQ4_0(row, buf.subarray(o, o + rowBytes), numberToF16);
      }
      yield buf;
    }
  }
}
