// The projections of a model a LoRA may target, with their shapes, read from config.json:
// attention q/k/v/o (full-attention layers), the dense MLP in dense layers, the shared experts in
// MoE layers that have them, the Gated DeltaNet projections of hybrid models' linear layers and
// bailing_moe_linear's fused attention.query_key_value / dense (+ g_proj on its lightning layers).
// Routed experts, routers and gates are never targets.
import type { RefConfig } from './reference/model-config.js';

export const ATTENTION = ['self_attn.q_proj', 'self_attn.k_proj', 'self_attn.v_proj', 'self_attn.o_proj'] as const;
export const DENSE_MLP = ['mlp.gate_proj', 'mlp.up_proj', 'mlp.down_proj'] as const;
export const SHARED_MLP = [
  'mlp.shared_experts.gate_proj',
  'mlp.shared_experts.up_proj',
  'mlp.shared_experts.down_proj',
] as const;
/** Qwen3-Next / Qwen3.5 name their (single, gated) shared expert without the s. */
export const SHARED_EXPERT = [
  'mlp.shared_expert.gate_proj',
  'mlp.shared_expert.up_proj',
  'mlp.shared_expert.down_proj',
] as const;
export const LINEAR_ATTENTION = [
  'linear_attn.in_proj_qkv',
  'linear_attn.in_proj_z',
  'linear_attn.in_proj_b',
  'linear_attn.in_proj_a',
  'linear_attn.in_proj_qkvz',
  'linear_attn.in_proj_ba',
  'linear_attn.out_proj',
] as const;
/** bailing_moe_linear: one fused projection and `dense` on every layer; g_proj on lightning layers. */
export const BAILING_ATTENTION = ['attention.query_key_value', 'attention.dense'] as const;
export const BAILING_LINEAR = ['attention.g_proj'] as const;
const GROUPS: Record<string, readonly string[]> = {
  attention: [...ATTENTION, ...BAILING_ATTENTION],
  mlp: DENSE_MLP,
  shared: [...SHARED_MLP, ...SHARED_EXPERT],
  linear: [...LINEAR_ATTENTION, ...BAILING_LINEAR],
  all: [
    ...ATTENTION,
    ...DENSE_MLP,
    ...SHARED_MLP,
    ...SHARED_EXPERT,
    ...LINEAR_ATTENTION,
    ...BAILING_ATTENTION,
    ...BAILING_LINEAR,
  ],
};
export const TARGET_NAMES = [...Object.keys(GROUPS), ...GROUPS.all!];

export interface TargetModule {
  /** model.layers.L.<inLayer>. */
  module: string;
  inLayer: string;
  layer: number;
  out: number;
  in: number;
}

/** Expands group names (attention, mlp, shared, all) and checks in-layer paths. */
export function expandTargets(names: readonly string[]): string[] {
  const out = new Set<string>();
  for (const n of names) {
    const g = GROUPS[n] ?? (GROUPS.all!.includes(n) ? [n] : undefined);
    if (!g) throw new RangeError(`target ${JSON.stringify(n)} is not one of ${TARGET_NAMES.join(', ')}`);
    g.forEach((t) => out.add(t));
  }
  return [...out];
}

/** [out, in] of an in-layer projection of layer l, or undefined where the layer has none. */
export function projectionShape(c: RefConfig, l: number, inLayer: string): [number, number] | undefined {
  if (c.linear) return hybridShape(c, l, inLayer);
  const q = c.heads * c.headDim;
  const kv = c.kvHeads * c.headDim;
  const dense = c.denseLayers.has(l);
  const shared = c.sharedIntermediate ?? c.moeIntermediate * c.sharedExperts;
  const h = c.hidden;
  // bailing: lightning layers have hidden-wide heads (3·hidden fused rows) and g_proj.
  const lightning = c.lightning?.layers.has(l) === true;
  const fused: Record<string, [number, number] | undefined> = c.lightning
    ? {
        'attention.query_key_value': lightning ? [3 * h, h] : [q + 2 * kv, h],
        'attention.dense': lightning ? [h, h] : [h, q],
        'attention.g_proj': lightning ? [h, h] : undefined,
      }
    : {};
  const shapes: Record<string, [number, number] | undefined> = {
    ...fused,
    ...(c.lightning
      ? {}
      : {
          'self_attn.q_proj': [q, c.hidden],
          'self_attn.k_proj': [kv, c.hidden],
          'self_attn.v_proj': [kv, c.hidden],
          'self_attn.o_proj': [c.hidden, q],
        }),
    'mlp.gate_proj': dense ? [c.intermediate, c.hidden] : undefined,
    'mlp.up_proj': dense ? [c.intermediate, c.hidden] : undefined,
    'mlp.down_proj': dense ? [c.hidden, c.intermediate] : undefined,
    'mlp.shared_experts.gate_proj': !dense && shared > 0 ? [shared, c.hidden] : undefined,
    'mlp.shared_experts.up_proj': !dense && shared > 0 ? [shared, c.hidden] : undefined,
    'mlp.shared_experts.down_proj': !dense && shared > 0 ? [c.hidden, shared] : undefined,
  };
  return shapes[inLayer];
}

/** Every (layer, target) the model has, layer by layer, for the given layers (default all). */
export function targetModules(c: RefConfig, targets: readonly string[], layers?: readonly number[]): TargetModule[] {
  const out: TargetModule[] = [];
  for (const l of layers ?? Array.from({ length: c.layers }, (_, i) => i)) {
    for (const inLayer of targets) {
      const shape = projectionShape(c, l, inLayer);
      if (shape) out.push({ module: `model.layers.${l}.${inLayer}`, inLayer, layer: l, out: shape[0], in: shape[1] });
    }
  }
  return out;
}

function hybridShape(c: RefConfig, l: number, inLayer: string): [number, number] | undefined {
  const h = c.hidden;
  const { kHeads, vHeads, kDim, vDim, fused, sharedIntermediate: si, layers } = c.linear!;
  const key = kHeads * kDim;
  const value = vHeads * vDim;
  const q = c.heads * c.headDim;
  const kv = c.kvHeads * c.headDim;
  const lin = layers.has(l);
  const shapes: Record<string, [number, number] | undefined> = lin
    ? {
        'linear_attn.in_proj_qkv': fused ? undefined : [2 * key + value, h],
        'linear_attn.in_proj_z': fused ? undefined : [value, h],
        'linear_attn.in_proj_b': fused ? undefined : [vHeads, h],
        'linear_attn.in_proj_a': fused ? undefined : [vHeads, h],
        'linear_attn.in_proj_qkvz': fused ? [2 * key + 2 * value, h] : undefined,
        'linear_attn.in_proj_ba': fused ? [2 * vHeads, h] : undefined,
        'linear_attn.out_proj': [h, value],
      }
    : {
        // q_proj gives q and its output gate per head.
        'self_attn.q_proj': [2 * q, h],
        'self_attn.k_proj': [kv, h],
        'self_attn.v_proj': [kv, h],
        'self_attn.o_proj': [h, q],
      };
  if (si > 0 && !c.denseLayers.has(l)) {
    shapes['mlp.shared_expert.gate_proj'] = [si, h];
    shapes['mlp.shared_expert.up_proj'] = [si, h];
    shapes['mlp.shared_expert.down_proj'] = [h, si];
  }
  return shapes[inLayer];
}
