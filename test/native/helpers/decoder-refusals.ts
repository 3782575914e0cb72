// What both whole-token decoders (Metal, CUDA) refuse by name, through their probes: scaled RoPE
// tables (decoder_unsupported).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import type { SynthArch } from '../../../daemon/tools/synth.js';
import { editJson, synthTemp } from './model-files.js';

/** Runs `binary --<probe>-decoder` on each refused model; `kernels`: the backend's name in messages. */
export function assertDecoderRefusals(
  t: { after(fn: () => void): void },
  binary: string,
  probe: 'metal' | 'cuda',
  kernels: string,
): void {
  const cases: { arch: SynthArch; why: string }[] = [
    { arch: 'llama', why: `scaled RoPE frequencies \\(llama3 rope_scaling\\) have no ${kernels} kernel yet` },
  ];
  for (const { arch, why } of cases) {
    const dir = synthTemp(t, { arch, seed: 7 });
    if (arch === 'llama')
      editJson(join(dir, 'config.json'), (j) => (j.rope_scaling = { rope_type: 'linear', factor: 2 }));
    const r = spawnSync(binary, [`--${probe}-decoder`, dir, '2'], { encoding: 'utf8', timeout: 120_000 });
    assert.equal(r.status, 1, `${arch}: refused`);
    assert.match(r.stderr, new RegExp(`${probe} decoder: ${why}`), arch);
  }
}
