// Prerouter heads files in Edge0's layout: one safetensors file, fp16, no biases, tensors
// layers.<N>.fc1.weight [units, F], layers.<N>.fc2.weight [E, units] and
// layers.<N>.linear_init.weight [E, F] with F = hidden + 2E; head N (owned by layer N) predicts
// layer N+1's router logits for the next token. Metadata names what the heads fit.
import { numberToF16 } from './float16.js';
import { writeSafetensors, type TensorSource } from './safetensors-writer.js';

export interface HeadWeights {
  owner: number;
  units: number;
  /** Row-major [units, F], [E, units], [E, F]. */
  fc1: Float32Array;
  fc2: Float32Array;
  linear: Float32Array;
}

export interface HeadsMetadata {
  topK: number;
  routing: 'softmax_topk' | 'sigmoid_group';
  hiddenSize: number;
  numExperts: number;
  /** Where the heads come from (free text). */
  source: string;
}

function f16Tensor(name: string, shape: number[], values: Float32Array): TensorSource {
  return {
    name,
    dtype: 'F16',
    shape,
    *chunks() {
      const out = new Uint16Array(values.length);
      for (let i = 0; i < values.length; i++) out[i] = numberToF16(values[i]!);
      yield new Uint8Array(out.buffer);
    },
  };
}

/** Writes the heads (sorted by owner) as fp16; returns the file size. */
export function writePrerouterHeads(path: string, heads: readonly HeadWeights[], meta: HeadsMetadata): number {
  const F = meta.hiddenSize + 2 * meta.numExperts;
  const E = meta.numExperts;
  const sorted = [...heads].sort((a, b) => a.owner - b.owner);
  const tensors: TensorSource[] = [];
  for (const h of sorted) {
    const want: [string, number, number][] = [
      ['fc1', h.fc1.length, h.units * F],
      ['fc2', h.fc2.length, E * h.units],
      ['linear_init', h.linear.length, E * F],
    ];
    for (const [name, got, n] of want) {
      if (got !== n) throw new RangeError(`head ${h.owner}: ${name} has ${got} values, expected ${n}`);
    }
    const p = `layers.${h.owner}`;
    tensors.push(f16Tensor(`${p}.fc1.weight`, [h.units, F], h.fc1));
    tensors.push(f16Tensor(`${p}.fc2.weight`, [E, h.units], h.fc2));
    tensors.push(f16Tensor(`${p}.linear_init.weight`, [E, F], h.linear));
  }
  return writeSafetensors(path, tensors, {
    kind: 'prerouter',
    format_version: '1',
    owners: sorted.map((h) => h.owner).join(','),
    top_k: String(meta.topK),
    routing: meta.routing,
    hidden_size: String(meta.hiddenSize),
    num_experts: String(meta.numExperts),
    feature_topk: 'executed',
    source: meta.source,
  });
}
