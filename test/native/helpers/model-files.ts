// Test helpers around model folders: a synthetic tiny model in a temp dir removed after the
// test, and surgery on safetensors headers and JSON files to build malformed folders.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { synthModel, type SynthOptions } from '../../../daemon/tools/synth.js';
import { tempDir } from '../../helpers/temp.js';

export type HeaderEntry = { dtype: string; shape: number[]; data_offsets: number[] };
export type Header = Record<string, HeaderEntry>;

/** `models synth` of a model (default shape tiny) into a temp dir removed after the test. */
export function synthTemp(
  t: { after(fn: () => void): void },
  opts: Omit<SynthOptions, 'out' | 'shape'> & { shape?: SynthOptions['shape'] },
): string {
  const dir = tempDir('bs-model-');
  t.after(() => dir.remove());
  synthModel({ shape: 'tiny', force: true, ...opts, out: dir.path });
  return dir.path;
}

/** Rewrites a safetensors file with an edited header; the data section stays byte for byte. */
export function editHeader(path: string, edit: (h: Header) => void): void {
  const buf = readFileSync(path);
  const n = Number(buf.readBigUInt64LE(0));
  const header = JSON.parse(buf.subarray(8, 8 + n).toString('utf8')) as Header;
  edit(header);
  const json = Buffer.from(JSON.stringify(header), 'utf8');
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(json.length));
  writeFileSync(path, Buffer.concat([len, json, buf.subarray(8 + n)]));
}

export function editJson(path: string, edit: (j: Record<string, unknown>) => void): void {
  const j = JSON.parse(readFileSync(path, 'utf8')) as Record<string, unknown>;
  edit(j);
  writeFileSync(path, JSON.stringify(j));
}

/** Path of the shard that model.safetensors.index.json maps `tensor` to. */
export function shardOf(dir: string, tensor: string): string {
  const index = JSON.parse(readFileSync(join(dir, 'model.safetensors.index.json'), 'utf8')) as {
    weight_map: Record<string, string>;
  };
  const shard = index.weight_map[tensor];
  if (!shard) throw new Error(`${tensor} is not in the index of ${dir}`);
  return join(dir, shard);
}

/** Overwrites one element of a float tensor with all-ones bits (a NaN in F32, F16 and BF16). */
export function poisonTensor(dir: string, tensor: string, element = 0): void {
  const path = shardOf(dir, tensor);
  const buf = readFileSync(path);
  const n = Number(buf.readBigUInt64LE(0));
  const e = (JSON.parse(buf.subarray(8, 8 + n).toString('utf8')) as Header)[tensor]!;
  const size = e.dtype === 'F32' ? 4 : 2;
  buf.fill(0xff, 8 + n + e.data_offsets[0]! + element * size, 8 + n + e.data_offsets[0]! + (element + 1) * size);
  writeFileSync(path, buf);
}
