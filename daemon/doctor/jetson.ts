// NVIDIA Jetson detection: systeminformation does not see Jetsons, so read the device-tree
// model (/proc/device-tree/model, NUL-terminated) and the L4T release (/etc/nv_tegra_release).
import { readFileSync } from 'node:fs';

export interface JetsonInfo {
  model: string;
  /** L4T release, e.g. "36.3.0" from "# R36 (release), REVISION: 3.0, ...". */
  l4t?: string;
  /** JetPack major implied by the L4T major (R32 → 4, R35 → 5, R36 → 6, R38 → 7). */
  jetpack_major?: number;
  /** CUDA arch of the module family (Orin sm_87, Xavier sm_72, Thor sm_110). */
  cuda_arch?: string;
}

export type ReadText = (path: string) => string | undefined;

export const readText: ReadText = (path) => {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
};

const JETPACK_BY_L4T: Record<number, number> = { 32: 4, 35: 5, 36: 6, 38: 7 };

export function parseTegraRelease(text: string): { l4t: string; major: number } | undefined {
  const m = /#\s*R(\d+)\s*\(release\),\s*REVISION:\s*(\d+)(?:\.(\d+))?/i.exec(text);
  if (!m) return undefined;
  return { l4t: `${m[1]}.${m[2]}.${m[3] ?? '0'}`, major: Number(m[1]) };
}

function cudaArch(model: string): string | undefined {
  if (/orin/i.test(model)) return 'sm_87';
  if (/xavier/i.test(model)) return 'sm_72';
  if (/thor/i.test(model)) return 'sm_110';
  return undefined;
}

/** Undefined when this is not a Jetson. */
export function detectJetson(read: ReadText = readText): JetsonInfo | undefined {
  const model = read('/proc/device-tree/model')?.replace(/\0/g, '').trim();
  const release = read('/etc/nv_tegra_release');
  const isJetson = (model && /jetson|nvidia/i.test(model)) || release !== undefined;
  if (!isJetson) return undefined;
  const info: JetsonInfo = { model: model || 'NVIDIA Jetson (unknown model)' };
  const rel = release ? parseTegraRelease(release) : undefined;
  if (rel) {
    info.l4t = rel.l4t;
    if (JETPACK_BY_L4T[rel.major]) info.jetpack_major = JETPACK_BY_L4T[rel.major];
  }
  const arch = cudaArch(info.model);
  if (arch) info.cuda_arch = arch;
  return info;
}
