// The projections of a qwen3_moe / glm4_moe model a LoRA may target, with their shapes, read
// from config.json: attention q/k/v/o in every layer, the dense MLP in dense layers, the shared
// experts in MoE layers that have them. Routed experts and routers are never targets.
import type { RefConfig } from './reference/model-config.js';

export const ATTENTION = ['self_attn.q_proj', 'self_attn.k_proj', 'self_attn.v_proj', 'self_attn.o_proj'] as const;
export const DENSE_MLP = ['mlp.gate_proj', 'mlp.up_proj', 'mlp.down_proj'] as const;
export const SHARED_MLP = [
  'mlp.shared_experts.gate_proj',
  'mlp.shared_experts.up_proj',
  'mlp.shared_experts.down_proj',
] as const;
const GROUPS: Record<string, readonly string[]> = {
  attention: ATTENTION,
  mlp: DENSE_MLP,
  shared: SHARED_MLP,
  all: [...ATTENTION, ...DENSE_MLP, ...SHARED_MLP],
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
  const q = c.heads * c.headDim;
  const kv = c.kvHeads * c.headDim;
  const dense = c.denseLayers.has(l);
  const shared = c.moeIntermediate * c.sharedExperts;
  const shapes: Record<string, [number, number] | undefined> = {
    'self_attn.q_proj': [q, c.hidden],
    'self_attn.k_proj': [kv, c.hidden],
    'self_attn.v_proj': [kv, c.hidden],
    'self_attn.o_proj': [c.hidden, q],
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
