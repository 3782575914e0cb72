// Test helpers for LoRA adapters: synthetic adapters in a temp dir, and hand-built adapter
// folders (any tensor names, shapes and config) for the bad-adapter cases.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { synthAdapter, type SynthAdapterOptions } from '../../../../daemon/tools/synth-adapter.js';
import type { SafetensorsDtype } from '../../../../daemon/models/safetensors-reader.js';
import { tensorByteLength, writeSafetensors } from '../../../../daemon/models/safetensors-writer.js';
import { tempDir } from '../../../helpers/temp.js';

type After = { after(fn: () => void): void };

/** `models synth-adapter` into a temp dir removed after the test. */
export function synthAdapterTemp(t: After, o: Omit<SynthAdapterOptions, 'out'>): string {
  const dir = tempDir('bs-adapter-');
  t.after(() => dir.remove());
  synthAdapter({ ...o, out: dir.path, force: true });
  return dir.path;
}

export interface RawTensor {
  name: string;
  shape: number[];
  dtype?: SafetensorsDtype;
}

/** A folder with `file` holding the given tensors (small constant values) and optional config. */
export function writeAdapterDir(
  t: After,
  file: string,
  tensors: RawTensor[],
  config?: Record<string, unknown>,
): string {
  const dir = tempDir('bs-bad-adapter-');
  t.after(() => dir.remove());
  mkdirSync(dir.path, { recursive: true });
  writeSafetensors(
    join(dir.path, file),
    tensors.map((x) => {
      const dtype = x.dtype ?? 'F32';
      const data = new Uint8Array(tensorByteLength(dtype, x.shape));
      return { name: x.name, dtype, shape: x.shape, chunks: () => [data] };
    }),
  );
  if (config) writeFileSync(join(dir.path, 'adapter_config.json'), JSON.stringify(config));
  return dir.path;
}

/** A valid PEFT config for the given target modules (overrides merged in). */
export function peftConfig(over: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    peft_type: 'LORA',
    r: 4,
    lora_alpha: 8,
    target_modules: ['q_proj', 'k_proj', 'v_proj', 'o_proj'],
    bias: 'none',
    ...over,
  };
}

export const maxAbs = (a: ArrayLike<number>) => Array.from(a).reduce((m, v) => Math.max(m, Math.abs(v)), 0);

export function maxAbsDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i]! - b[i]!));
  return m;
}
