// The one internal form every LoRA adapter format is normalised into (a plan), and the checks
// the three format readers share: A/B pairing, ranks against the config, module layer indices.
// The native loader then checks each module against the model and copies the tensors.
import type { AdapterModuleSpec, AdapterSpec } from '../../native/binding.js';
import type { TensorInfo } from '../../models/safetensors-reader.js';

export const ADAPTER_FORMATS = ['peft', 'mlx', 'edge0'] as const;
export type AdapterFormat = (typeof ADAPTER_FORMATS)[number];

export interface PlannedModule extends AdapterModuleSpec {
  rank: number;
  /** Index N of model.layers.N. */
  layer: number;
}

export interface AdapterPlan extends AdapterSpec {
  format: AdapterFormat;
  /** The folder (or file) it was read from. */
  source: string;
  modules: PlannedModule[];
}

/** A bad adapter: the message names the file, tensor or config field, the rule and the value;
 *  `field` is the request field at fault (the adapter's `path`, its `name`, or the `model`). */
export class AdapterError extends Error {
  constructor(
    message: string,
    readonly field: 'path' | 'name' | 'model' = 'path',
  ) {
    super(message);
    this.name = 'AdapterError';
  }
}

/** model.layers.N.… → N (undefined for a module outside the layers). */
export function layerOf(module: string): number | undefined {
  const m = /(?:^|\.)layers\.(\d+)\./.exec(module);
  return m ? Number(m[1]) : undefined;
}

/** What a format reader found for one module: its A and B tensors. */
export interface TensorPair {
  module: string;
  a?: TensorInfo;
  b?: TensorInfo;
}

/**
 * Groups a file's tensors into (module → A, B) by the format's suffixes; every other tensor is
 * reported through `unexpected` (which throws with a format-specific reason).
 */
export function pairTensors(
  tensors: Iterable<TensorInfo>,
  suffixA: string,
  suffixB: string,
  moduleOf: (prefix: string) => string,
  unexpected: (t: TensorInfo) => never,
): TensorPair[] {
  const pairs = new Map<string, TensorPair>();
  for (const t of tensors) {
    const isA = t.name.endsWith(suffixA);
    if (!isA && !t.name.endsWith(suffixB)) unexpected(t);
    const module = moduleOf(t.name.slice(0, t.name.length - (isA ? suffixA : suffixB).length));
    const pair = pairs.get(module) ?? { module };
    pair[isA ? 'a' : 'b'] = t;
    pairs.set(module, pair);
  }
  return [...pairs.values()].sort(
    (x, y) => (layerOf(x.module) ?? -1) - (layerOf(y.module) ?? -1) || x.module.localeCompare(y.module),
  );
}

/** The rank of a complete pair (A [r, in] or, transposed, [in, r]); fails on a half pair. The
 *  native loader checks the full shapes against the module (after refusing routed experts). */
export function pairRank(p: TensorPair, transposed: boolean, file: string): number {
  if (!p.a || !p.b) {
    const [have, miss] = p.a ? [p.a.name, 'B'] : [p.b!.name, 'A'];
    throw new AdapterError(`${file}: tensor ${have} has no matching LoRA ${miss} tensor for module ${p.module}`);
  }
  if (p.a.shape.length < 2)
    throw new AdapterError(`${file}: tensor ${p.a.name} must be a matrix, got shape [${p.a.shape.join(', ')}]`);
  return p.a.shape[transposed ? p.a.shape.length - 1 : 0]!;
}

/** The pair's module as a plan entry; the layer must be one of `layers`. */
export function plannedModule(
  p: TensorPair,
  rank: number,
  scale: number,
  transposed: boolean,
  file: string,
  layers: number,
): PlannedModule {
  const layer = layerOf(p.module);
  if (layer === undefined || layer >= layers) {
    const why =
      layer === undefined ? 'is not inside model.layers.N' : `is in layer ${layer} but the model has ${layers} layers`;
    throw new AdapterError(`${file}: tensor ${p.a!.name} targets ${p.module}, which ${why}`);
  }
  if (!Number.isFinite(scale)) throw new AdapterError(`${file}: module ${p.module} gets a non-finite scale ${scale}`);
  return { module: p.module, a: p.a!.name, b: p.b!.name, transposed, scale, rank, layer };
}
