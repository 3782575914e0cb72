// Rewrites a synthetic model folder's stacked experts (mlx-lm's switch_mlp) into the layouts
// Hugging Face checkpoints use: one tensor per expert (experts.N.*, odd experts in a shard of
// their own, names sorted so an expert's tensors do not follow each other), or gate and up fused
// per expert (experts.gate_up_proj [E, 2·inter, hidden] + experts.down_proj). `plain` first
// dequantises the experts to F32 (fused plain tensors are named without ".weight", as HF does).
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SafetensorsFile } from '../../../daemon/models/safetensors-reader.js';
import { type TensorSource, writeSafetensors } from '../../../daemon/models/safetensors-writer.js';

export type ExpertLayout = 'stacked' | 'per-expert' | 'fused';

type Tensor = { name: string; dtype: TensorSource['dtype']; shape: number[]; bytes: Uint8Array };
const PROJ = /^(.*\.mlp)\.switch_mlp\.(gate|up|down)_proj\.(weight|scales|biases)$/;

function bf16(b: Uint8Array, i: number): number {
  const f = new Float32Array(1);
  new Uint32Array(f.buffer)[0] = (b[2 * i]! | (b[2 * i + 1]! << 8)) << 16;
  return f[0]!;
}

/** The F32 values of a stacked quantised module [E, out, in] (bf16 scales and biases). */
function dequantise(w: Tensor, scales: Tensor, biases: Tensor, bits: number, group: number): Tensor {
  const [E, out] = w.shape as [number, number];
  const words = new Uint32Array(w.bytes.buffer.slice(w.bytes.byteOffset, w.bytes.byteOffset + w.bytes.byteLength));
  const cols = (w.shape[2]! * 32) / bits;
  const values = new Float32Array(E * out * cols);
  for (let r = 0; r < E * out; r++) {
    for (let c = 0; c < cols; c++) {
      const bit = c * bits;
      const q = (words[r * w.shape[2]! + Math.floor(bit / 32)]! >>> (bit % 32)) & ((1 << bits) - 1);
      const g = r * (cols / group) + Math.floor(c / group);
      values[r * cols + c] = bf16(scales.bytes, g) * q + bf16(biases.bytes, g);
    }
  }
  return { name: w.name, dtype: 'F32', shape: [E, out, cols], bytes: new Uint8Array(values.buffer) };
}

/** Expert e's slice of a stacked tensor; `half` takes the first or second half of its rows. */
function slice(t: Tensor, e: number, half?: 0 | 1): Uint8Array {
  const per = t.bytes.length / t.shape[0]!;
  const from = e * per + (half === undefined ? 0 : (half * per) / 2);
  return t.bytes.subarray(from, from + (half === undefined ? per : per / 2));
}

function rewrite(mlp: string, parts: Map<string, Tensor>, layout: ExpertLayout): [Tensor, boolean][] {
  const out: [Tensor, boolean][] = []; // [tensor, goes to the odd-expert shard]
  const kinds = [...new Set([...parts.keys()].map((k) => k.split('.')[1]!))];
  const E = parts.get('gate.weight')!.shape[0]!;
  for (const kind of kinds) {
    const suffix = kind === 'weight' && parts.get('gate.weight')!.dtype === 'F32' ? '' : `.${kind}`;
    if (layout === 'stacked') {
      for (const p of ['gate', 'up', 'down'])
        out.push([{ ...parts.get(`${p}.${kind}`)!, name: `${mlp}.switch_mlp.${p}_proj.${kind}` }, false]);
    } else if (layout === 'per-expert') {
      for (const p of ['gate', 'up', 'down']) {
        const t = parts.get(`${p}.${kind}`)!;
        for (let e = 0; e < E; e++) {
          const name = `${mlp}.experts.${e}.${p}_proj.${kind}`;
          out.push([{ name, dtype: t.dtype, shape: t.shape.slice(1), bytes: slice(t, e) }, e % 2 === 1]);
        }
      }
    } else {
      const g = parts.get(`gate.${kind}`)!;
      const u = parts.get(`up.${kind}`)!;
      const fused = new Uint8Array(g.bytes.length * 2);
      for (let e = 0; e < E; e++) {
        fused.set(slice(g, e), e * 2 * slice(g, e).length);
        fused.set(slice(u, e), (e * 2 + 1) * slice(g, e).length);
      }
      const shape = [E, g.shape[1]! * 2, g.shape[2]!];
      out.push([{ name: `${mlp}.experts.gate_up_proj${suffix}`, dtype: g.dtype, shape, bytes: fused }, false]);
      const d = parts.get(`down.${kind}`)!;
      out.push([{ ...d, name: `${mlp}.experts.down_proj${suffix}` }, false]);
    }
  }
  return out;
}

/** Rewrites `dir` in place: every layer's experts in `layout`, dequantised to F32 when `plain`. */
export function rewriteExperts(dir: string, layout: ExpertLayout, plain = false): void {
  const config = JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8')) as Record<string, unknown>;
  const quant = (config.quantization ?? {}) as { bits?: number; group_size?: number };
  const indexPath = join(dir, 'model.safetensors.index.json');
  const index = JSON.parse(readFileSync(indexPath, 'utf8')) as { weight_map: Record<string, string> };
  const shards = new Map<string, Tensor[]>([['experts-odd.safetensors', []]]);
  // A layer's expert tensors may span shards: they are gathered, then written to the first one's.
  const experts = new Map<string, { shard: string; parts: Map<string, Tensor> }>();
  for (const shard of readdirSync(dir).filter((f) => f.endsWith('.safetensors'))) {
    const file = SafetensorsFile.open(join(dir, shard));
    const kept: Tensor[] = [];
    shards.set(shard, kept);
    for (const t of [...file.tensors.values()].sort((a, b) => a.begin - b.begin)) {
      const tensor = { name: t.name, dtype: t.dtype, shape: t.shape, bytes: new Uint8Array(file.read(t.name)) };
      const m = PROJ.exec(t.name);
      if (!m) {
        kept.push(tensor);
        continue;
      }
      if (!experts.has(m[1]!)) experts.set(m[1]!, { shard, parts: new Map() });
      experts.get(m[1]!)!.parts.set(`${m[2]}.${m[3]}`, tensor);
      delete index.weight_map[t.name];
    }
    file.close();
  }
  for (const [mlp, { shard, parts }] of experts) {
    if (plain) {
      for (const p of ['gate', 'up', 'down']) {
        const [w, s, b] = ['weight', 'scales', 'biases'].map((k) => parts.get(`${p}.${k}`)!) as [
          Tensor,
          Tensor,
          Tensor,
        ];
        parts.set(`${p}.weight`, dequantise(w, s, b, quant.bits ?? 4, quant.group_size ?? 64));
        parts.delete(`${p}.scales`);
        parts.delete(`${p}.biases`);
      }
    }
    for (const [t, toOdd] of rewrite(mlp, parts, layout)) {
      const to = toOdd ? 'experts-odd.safetensors' : shard;
      shards.get(to)!.push(t);
      index.weight_map[t.name] = to;
    }
  }
  for (const [shard, tensors] of shards) {
    if (tensors.length === 0) continue;
    if (layout === 'per-expert') tensors.sort((a, b) => (a.name < b.name ? -1 : 1));
    write(join(dir, shard), tensors);
  }
  writeFileSync(indexPath, JSON.stringify(index));
}

function write(path: string, tensors: Tensor[]): void {
  writeSafetensors(
    path,
    tensors.map((t) => ({ name: t.name, dtype: t.dtype, shape: t.shape, chunks: () => [t.bytes] })),
  );
}
