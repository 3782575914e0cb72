// A copy of a model folder with some quantised modules replaced (the merged-and-requantised model
// of `lora merge-check`): shards holding a replaced module are rewritten (other tensors' bytes
// streamed from the original), the rest are symlinked, config/index/tokenizer files are copied.
// The original folder is only read.
import { copyFileSync, mkdirSync, readdirSync, symlinkSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { encodeFloats } from '../models/float16.js';
import type { QuantizedMatrix } from '../models/mlx-quant.js';
import { SafetensorsFile, SafetensorsModel } from '../models/safetensors-reader.js';
import { writeSafetensors, type TensorSource } from '../models/safetensors-writer.js';

const CHUNK = 16 << 20;

/** Writes `dir` = `src` with each module in `replace` (path → quantised matrix) swapped in. */
export function writeMergedFolder(src: string, dir: string, replace: Map<string, QuantizedMatrix>): void {
  mkdirSync(dir, { recursive: true });
  const model = SafetensorsModel.open(src);
  const replaced = new Map<string, Uint8Array>();
  for (const [path, q] of replace) {
    const dtype = model.info(`${path}.scales`).dtype;
    if (dtype !== 'F32' && dtype !== 'F16' && dtype !== 'BF16')
      throw new Error(`${path}.scales has dtype ${dtype}; only float scales can be rewritten`);
    replaced.set(`${path}.weight`, new Uint8Array(q.weight.buffer, q.weight.byteOffset, q.weight.byteLength));
    replaced.set(`${path}.scales`, encodeFloats(q.scales, dtype));
    replaced.set(`${path}.biases`, encodeFloats(q.biases, dtype));
  }
  model.close();
  for (const name of readdirSync(src)) {
    const from = join(src, name);
    if (!name.endsWith('.safetensors')) {
      copyFileSync(from, join(dir, name));
      continue;
    }
    const file = SafetensorsFile.open(from);
    try {
      const tensors = [...file.tensors.values()].sort((a, b) => a.begin - b.begin);
      if (!tensors.some((t) => replaced.has(t.name))) {
        symlinkSync(resolve(from), join(dir, name));
        continue;
      }
      const sources: TensorSource[] = tensors.map((t) => ({
        name: t.name,
        dtype: t.dtype,
        shape: t.shape,
        chunks: function* () {
          const mine = replaced.get(t.name);
          if (mine) {
            if (mine.length !== t.end - t.begin)
              throw new Error(`${t.name}: replacement has ${mine.length} bytes, the file ${t.end - t.begin}`);
            yield mine;
            return;
          }
          for (let at = 0; at < t.end - t.begin; at += CHUNK)
            yield file.read(t.name, at, Math.min(CHUNK, t.end - t.begin - at));
        },
      }));
      writeSafetensors(join(dir, name), sources, file.metadata);
    } finally {
      file.close();
    }
  }
}
