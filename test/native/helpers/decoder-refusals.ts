// What both whole-token decoders (Metal, CUDA) refuse by name, through their probes
// (decoder_unsupported): experts not in one stack (Hugging Face's one tensor per expert).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { editJson, synthTemp } from './model-files.js';
import { rewriteExperts } from './expert-layouts.js';

/** Runs `binary --<probe>-decoder` on each refused model. */
export function assertDecoderRefusals(
  t: { after(fn: () => void): void },
  binary: string,
  probe: 'metal' | 'cuda',
): void {
  const dir = synthTemp(t, { arch: 'qwen3_moe', seed: 7 });
  rewriteExperts(dir, 'per-expert');
  const r = spawnSync(binary, [`--${probe}-decoder`, dir, '2'], { encoding: 'utf8', timeout: 120_000 });
  assert.equal(r.status, 1, 'refused');
  assert.match(r.stderr, new RegExp(`${probe} decoder: per-expert or fused expert layouts \\(the kernels gather`));
}

/** Folders with rope_scaling whose frequency table both decoders upload: llama with Llama 3.1's
 *  llama3, qwen3 with Qwen3's YaRN (and its attention factor, in the softmax scale). */
export function ropeScaled(t: { after(fn: () => void): void }): [string, string][] {
  const scaled = (arch: 'llama' | 'qwen3', rope_scaling: Record<string, unknown>): string => {
    const dir = synthTemp(t, { arch, seed: 7 });
    editJson(join(dir, 'config.json'), (j) => (j.rope_scaling = rope_scaling));
    return dir;
  };
  const llama3 = { rope_type: 'llama3', factor: 8, low_freq_factor: 1, high_freq_factor: 4 };
  return [
    ['llama3', scaled('llama', { ...llama3, original_max_position_embeddings: 16 })],
    ['yarn', scaled('qwen3', { rope_type: 'yarn', factor: 4, original_max_position_embeddings: 8 })],
  ];
}
