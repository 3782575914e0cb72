// What the whole-token decoders' tests (CUDA, Metal) share: agreement with the CPU reference
// kernels, and the rope_scaling folders both run.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { editJson, synthTemp } from './model-files.js';

/** What a decoder probe prints besides its own counters. */
export interface DecoderProbe {
  device: string;
  tokens_cpu: number[];
  max_rel_logit_diff: number;
}

/** The device's greedy tokens are the CPU's, all `steps` of them, and its logits are within `tol`
 *  of the largest (f16 caches: 1e-3). */
export function assertLikeCpu(p: DecoderProbe, tokens: number[], steps: number, label = '', tol = 1e-4): void {
  const at = label ? `${label}: ` : '';
  assert.equal(tokens.length, steps, `${at}every step ran`);
  assert.deepEqual(tokens, p.tokens_cpu, `${at}greedy tokens (${p.device})`);
  assert.ok(p.max_rel_logit_diff < tol, `${at}logits differ by ${p.max_rel_logit_diff} of the largest`);
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
