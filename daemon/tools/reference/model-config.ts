// config.json of an MLX folder (qwen3_moe, glm4_moe, the hybrids, bailing_moe_linear, dense qwen3
// and llama), read into one typed shape for the float64 reference. Missing or wrong keys are
// reported by name.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { mropeParams } from '../../models/mrope-params.js';

export interface QuantParams {
  bits: number;
  groupSize: number;
}

/** Gated DeltaNet sizes and the layer pattern of a hybrid model (qwen3_next, qwen3_5_moe). */
export interface RefLinearConfig {
  kHeads: number;
  vHeads: number;
  kDim: number;
  vDim: number;
  convKernel: number;
  /** Layers that are Gated DeltaNet (the others: gated full attention). */
  layers: Set<number>;
  /** qwen3_next: in_proj_qkvz / in_proj_ba grouped per k head. */
  fused: boolean;
  sharedIntermediate: number;
}

/** bailing_moe_linear's lightning layers: heads of hidden/heads, their RoPE width, the output
 *  norm's group count. */
export interface RefLightningConfig {
  layers: Set<number>;
  headDim: number;
  rotaryDims: number;
  groups: number;
}

export interface RefConfig {
  arch: 'qwen3_moe' | 'glm4_moe' | 'qwen3_next' | 'qwen3_5_moe' | 'qwen3' | 'llama' | 'bailing_moe_linear';
  /** Tensor-name prefix ("language_model." for qwen3_5_moe). */
  prefix: string;
  /** The embedding's module path (bailing: model.word_embeddings). */
  embed: string;
  /** Hybrid models only. */
  linear?: RefLinearConfig;
  /** bailing_moe_linear only. */
  lightning?: RefLightningConfig;
  /** Multimodal RoPE sections (time, height, width) and their layout; absent: 1-D RoPE. */
  mrope?: { section: [number, number, number]; interleaved: boolean };
  vocabSize: number;
  /** Trained context length (max_position_embeddings). */
  maxPositions: number;
  hidden: number;
  layers: number;
  heads: number;
  kvHeads: number;
  headDim: number;
  /** RoPE applies to the first `rotaryDims` of each head (pairs i, i + rotaryDims/2). */
  rotaryDims: number;
  ropeTheta: number;
  /** rope_scaling (llama3, linear, yarn): each pair's frequency; absent: theta^(-2i/rot). */
  ropeInvFreq?: number[];
  /** YaRN: cos and sin scaled by this attention factor. */
  ropeMscale?: number;
  rmsEps: number;
  experts: number;
  topK: number;
  normTopK: boolean;
  /** Layers with a dense MLP of `intermediate` instead of routed experts. */
  denseLayers: Set<number>;
  intermediate: number;
  moeIntermediate: number;
  sharedExperts: number;
  /** Width of the shared experts together when not moeIntermediate × sharedExperts (bailing). */
  sharedIntermediate?: number;
  nGroup: number;
  topkGroup: number;
  routedScaling: number;
  attentionBias: boolean;
  qkNorm: boolean;
  tied: boolean;
  /** Global quantisation and per-module overrides (module path → params). */
  quant?: QuantParams;
  quantOverrides: Map<string, QuantParams>;
}

export function readRefConfig(dir: string): RefConfig {
  const path = join(dir, 'config.json');
  let raw: Record<string, unknown>;
  try {
    raw = JSON.parse(readFileSync(path, 'utf8'));
  } catch (e) {
    throw new Error(`${path}: cannot read (${(e as Error).message})`);
  }
  return parseRefConfig(raw, path);
}

export function parseRefConfig(root: Record<string, unknown>, where = 'config.json'): RefConfig {
  // qwen3_vl_moe: the language model is qwen3_moe in text_config, tensors under language_model.
  const vl = root.model_type === 'qwen3_vl_moe';
  const text = root.text_config as Record<string, unknown>;
  // transformers 5 keeps rope_theta under rope_parameters.
  const theta = (text?.rope_parameters as { rope_theta?: number } | undefined)?.rope_theta;
  const c = vl ? { ...(theta === undefined ? {} : { rope_theta: theta }), ...text, model_type: 'qwen3_moe' } : root;
  const num = (key: string, fallback?: number): number => {
    const v = c[key] ?? fallback;
    if (typeof v !== 'number' || !Number.isFinite(v))
      throw new Error(`${where}: ${key} must be a number, got ${JSON.stringify(c[key])}`);
    return v;
  };
  const int = (key: string, fallback?: number): number => {
    const v = num(key, fallback);
    if (!Number.isInteger(v) || v < 0) throw new Error(`${where}: ${key} must be a non-negative integer, got ${v}`);
    return v;
  };
  const bool = (key: string, fallback: boolean): boolean => {
    const v = c[key] ?? fallback;
    if (typeof v !== 'boolean') throw new Error(`${where}: ${key} must be true or false, got ${JSON.stringify(v)}`);
    return v;
  };
  const arch = c.model_type;
  if (arch === 'qwen3_next' || arch === 'qwen3_5_moe') return parseHybrid(c, where);
  if (arch === 'bailing_moe_linear') return parseBailing(c, where);
  if (arch !== 'qwen3_moe' && arch !== 'glm4_moe' && arch !== 'qwen3' && arch !== 'llama') {
    throw new Error(
      `${where}: model_type must be qwen3_moe, glm4_moe, qwen3_next, qwen3_5_moe, qwen3, llama or bailing_moe_linear, got ${JSON.stringify(arch)}`,
    );
  }
  const glm = arch === 'glm4_moe';
  const dense = arch === 'qwen3' || arch === 'llama';
  const layers = int('num_hidden_layers');
  const heads = int('num_attention_heads');
  const hidden = int('hidden_size');
  const headDim = int('head_dim', hidden / heads);
  const denseLayers = new Set<number>();
  if (dense) {
    for (let l = 0; l < layers; l++) denseLayers.add(l);
  } else if (glm) {
    const k = int('first_k_dense_replace', 0);
    for (let l = 0; l < Math.min(k, layers); l++) denseLayers.add(l);
  } else {
    const step = int('decoder_sparse_step', 1);
    const only = c.mlp_only_layers ?? [];
    if (!Array.isArray(only)) throw new Error(`${where}: mlp_only_layers must be a list, got ${JSON.stringify(only)}`);
    for (let l = 0; l < layers; l++) if (only.includes(l) || step < 1 || (l + 1) % step !== 0) denseLayers.add(l);
  }
  const { quant, overrides } = parseQuantization(root.quantization, where);
  const mrope = vl ? mropeFrom(c) : undefined;
  const scaled =
    arch === 'llama' || arch === 'qwen3' || arch === 'qwen3_moe'
      ? scaledInvFreq(c.rope_scaling, headDim, num('rope_theta'), int('max_position_embeddings', 4096))
      : undefined;
  return {
    ...(scaled ? { ropeInvFreq: scaled.invFreq, ropeMscale: scaled.mscale } : {}),
    arch,
    prefix: vl ? 'language_model.' : '',
    embed: 'model.embed_tokens',
    ...(mrope ? { mrope } : {}),
    vocabSize: int('vocab_size'),
    maxPositions: int('max_position_embeddings', 4096),
    hidden,
    layers,
    heads,
    kvHeads: int('num_key_value_heads'),
    headDim,
    rotaryDims: Math.trunc(headDim * (glm ? num('partial_rotary_factor', 0.5) : 1)),
    ropeTheta: num('rope_theta'),
    rmsEps: num('rms_norm_eps'),
    experts: dense ? 0 : int(glm ? 'n_routed_experts' : 'num_experts'),
    topK: dense ? 0 : int('num_experts_per_tok'),
    normTopK: bool('norm_topk_prob', glm),
    denseLayers,
    intermediate: int('intermediate_size'),
    moeIntermediate: dense ? 0 : int('moe_intermediate_size'),
    sharedExperts: glm ? int('n_shared_experts', 0) : 0,
    nGroup: glm ? int('n_group', 1) : 1,
    topkGroup: glm ? int('topk_group', 1) : 1,
    routedScaling: glm ? num('routed_scaling_factor', 1) : 1,
    attentionBias: bool('attention_bias', false),
    qkNorm: glm ? bool('use_qk_norm', false) : arch !== 'llama',
    tied: bool('tie_word_embeddings', false),
    quant,
    quantOverrides: overrides,
  };
}

function parseQuantization(q: unknown, where: string): { quant?: QuantParams; overrides: Map<string, QuantParams> } {
  const overrides = new Map<string, QuantParams>();
  if (q === undefined || q === null) return { overrides };
  if (typeof q !== 'object') throw new Error(`${where}: quantization must be an object, got ${JSON.stringify(q)}`);
  const params = (v: unknown, key: string): QuantParams => {
    const o = v as { bits?: unknown; group_size?: unknown };
    if (typeof o?.bits !== 'number' || typeof o?.group_size !== 'number') {
      throw new Error(`${where}: quantization${key} needs numeric bits and group_size, got ${JSON.stringify(v)}`);
    }
    return { bits: o.bits, groupSize: o.group_size };
  };
  const quant = params(q, '');
  for (const [k, v] of Object.entries(q)) {
    if (typeof v === 'object' && v !== null) overrides.set(k, params(v, `["${k}"]`));
  }
  return { quant, overrides };
}

/** qwen3_next (keys at the top) and qwen3_5_moe (keys under text_config, RoPE under
 *  rope_parameters): the qwen3_moe fields plus the Gated DeltaNet ones. */
function parseHybrid(c: Record<string, unknown>, where: string): RefConfig {
  const arch = c.model_type as 'qwen3_next' | 'qwen3_5_moe';
  const text = (arch === 'qwen3_5_moe' ? c.text_config : c) as Record<string, unknown> | undefined;
  if (typeof text !== 'object' || text === null) throw new Error(`${where}: text_config must be an object`);
  const rope = (text.rope_parameters ?? {}) as Record<string, unknown>;
  const base = parseRefConfig(
    { ...text, ...rope, model_type: 'qwen3_moe', quantization: c.quantization, intermediate_size: 1 },
    where,
  );
  const int = (key: string): number => {
    const v = text[key];
    if (typeof v !== 'number' || !Number.isInteger(v) || v < 1)
      throw new Error(`${where}: ${key} must be a positive integer, got ${JSON.stringify(v)}`);
    return v;
  };
  const mrope = arch === 'qwen3_5_moe' ? mropeFrom(text) : undefined;
  const layers = new Set<number>();
  const interval = int('full_attention_interval');
  for (let l = 0; l < base.layers; l++) if ((l + 1) % interval !== 0) layers.add(l);
  return {
    ...base,
    arch,
    prefix: arch === 'qwen3_5_moe' ? 'language_model.' : '',
    ...(mrope ? { mrope } : {}),
    rotaryDims: Math.trunc(base.headDim * ((rope.partial_rotary_factor ?? text.partial_rotary_factor) as number)),
    normTopK: arch === 'qwen3_5_moe' ? true : base.normTopK,
    linear: {
      kHeads: int('linear_num_key_heads'),
      vHeads: int('linear_num_value_heads'),
      kDim: int('linear_key_head_dim'),
      vDim: int('linear_value_head_dim'),
      convKernel: int('linear_conv_kernel_dim'),
      layers,
      fused: arch === 'qwen3_next',
      sharedIntermediate: int('shared_expert_intermediate_size'),
    },
  };
}

/** bailing_moe_linear: glm4_moe's routing keys under bailing names, lightning layers everywhere
 *  but the last layer of each layer_group_size group (and the layers past the last whole group). */
function parseBailing(c: Record<string, unknown>, where: string): RefConfig {
  const base = parseRefConfig(
    {
      ...c,
      model_type: 'glm4_moe',
      n_routed_experts: c.num_experts,
      n_shared_experts: c.num_shared_experts,
      attention_bias: false,
    },
    where,
  );
  const int = (key: string): number => {
    const v = c[key];
    if (typeof v !== 'number' || !Number.isInteger(v) || v < 1)
      throw new Error(`${where}: ${key} must be a positive integer, got ${JSON.stringify(v)}`);
    return v;
  };
  const group = int('layer_group_size');
  const layers = new Set<number>();
  const whole = Math.floor(base.layers / group) * group;
  for (let l = 0; l < base.layers; l++) if ((l + 1) % group !== 0 && l < whole) layers.add(l);
  const headDim = base.hidden / base.heads;
  const factor = (c.partial_rotary_factor ?? 1) as number;
  const sharedOn = c.moe_router_enable_shared_expert !== false;
  const perShared = (c.moe_shared_expert_intermediate_size ?? base.moeIntermediate) as number;
  return {
    ...base,
    sharedExperts: sharedOn ? base.sharedExperts : 0,
    sharedIntermediate: sharedOn ? base.sharedExperts * perShared : 0,
    arch: 'bailing_moe_linear',
    embed: 'model.word_embeddings',
    rotaryDims: Math.trunc(base.headDim * factor),
    qkNorm: c.use_qk_norm === true,
    lightning: { layers, headDim, rotaryDims: Math.trunc(headDim * factor), groups: int('group_norm_size') },
  };
}

/** Hugging Face's llama3 frequencies: θ^(-2i/d) kept where its wavelength 2π/f is under
 *  original/high_freq_factor, divided by factor over original/low_freq_factor, and in between
 *  (1 − s)·f/factor + s·f with s = (original/wavelength − low)/(high − low); linear divides all. */
/** rope_scaling's frequency table (llama3, linear, yarn) and YaRN's attention factor, from
 *  Hugging Face's _compute_{llama3,linear_scaling,yarn}_parameters. */
function scaledInvFreq(
  scaling: unknown,
  dims: number,
  theta: number,
  maxPositions: number,
): { invFreq: number[]; mscale: number } | undefined {
  const s = (scaling ?? {}) as Record<string, number | string | boolean | undefined>;
  const type = s.type ?? s.rope_type ?? 'default';
  if (type === 'default' || type === 'mrope') return undefined;
  const base = Array.from({ length: dims / 2 }, (_, i) => theta ** ((-2 * i) / dims));
  const factor = s.factor as number;
  if (type === 'linear') return { invFreq: base.map((f) => f / factor), mscale: 1 };
  if (type === 'yarn') {
    const original = (s.original_max_position_embeddings as number | undefined) ?? maxPositions;
    const at = (rotations: number) => (dims * Math.log(original / (rotations * 2 * Math.PI))) / (2 * Math.log(theta));
    const truncate = s.truncate !== false;
    const low = Math.max(
      truncate ? Math.floor(at((s.beta_fast as number) || 32)) : at((s.beta_fast as number) || 32),
      0,
    );
    let high = Math.min(
      truncate ? Math.ceil(at((s.beta_slow as number) || 1)) : at((s.beta_slow as number) || 1),
      dims - 1,
    );
    if (low === high) high += 0.001;
    const invFreq = base.map((f, i) => {
      const keep = 1 - Math.min(1, Math.max(0, (i - low) / (high - low)));
      return (f / factor) * (1 - keep) + f * keep;
    });
    const m = (scale: number, ms = 1) => (scale <= 1 ? 1 : 0.1 * ms * Math.log(scale) + 1);
    const ms = s.mscale as number | undefined;
    const all = s.mscale_all_dim as number | undefined;
    const mscale =
      (s.attention_factor as number | undefined) ?? (ms && all ? m(factor, ms) / m(factor, all) : m(factor));
    return { invFreq, mscale };
  }
  const low = (s.low_freq_factor ?? 1) as number;
  const high = (s.high_freq_factor ?? 4) as number;
  const original = (s.original_max_position_embeddings ?? 8192) as number;
  const invFreq = base.map((f) => {
    const wavelength = (2 * Math.PI) / f;
    if (wavelength < original / high) return f;
    if (wavelength > original / low) return f / factor;
    const smooth = (original / wavelength - low) / (high - low);
    return ((1 - smooth) * f) / factor + smooth * f;
  });
  return { invFreq, mscale: 1 };
}

/** A text config's multimodal RoPE (Qwen3-VL, Qwen3.5) when it lists three sections; the engine
 *  checks their sum against the rotary dims. */
function mropeFrom(text: Record<string, unknown>): RefConfig['mrope'] {
  const m = mropeParams(text);
  if (m?.mrope_section.length !== 3) return undefined;
  return { section: m.mrope_section as [number, number, number], interleaved: m.mrope_interleaved === true };
}
