// What both whole-token decoders (Metal, CUDA) refuse by name, through their probes
// (decoder_unsupported): experts not in one stack (Hugging Face's one tensor per expert).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { synthTemp } from './model-files.js';
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
