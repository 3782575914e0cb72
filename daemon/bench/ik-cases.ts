// IK test cases in the CSV format of the ik-ur5e oracle (any joint count):
// case,q0..q{n-1},px,py,pz,qx,qy,qz,qw,seed0..seed{n-1} (metres, quaternion xyzw).
import { fromPose } from '../../robot/math/quaternion.js';
import type { Transform } from '../../robot/math/transform.js';

export interface IkCase {
  id: number;
  /** Joint vector the target was generated from. */
  truth: Float64Array;
  target: Transform;
  seed: Float64Array;
}

export type IkCasesResult = { ok: true; dof: number; cases: IkCase[] } | { ok: false; error: string };

export function parseIkCases(text: string): IkCasesResult {
  const lines = text.split(/\r?\n/).filter((l) => l.trim() !== '');
  if (lines.length === 0) return { ok: false, error: 'cases file is empty' };
  const header = lines[0].split(',').map((h) => h.trim());
  const col = new Map(header.map((h, i) => [h, i]));
  let dof = 0;
  while (col.has(`q${dof}`)) dof++;
  const need = ['case', 'px', 'py', 'pz', 'qx', 'qy', 'qz', 'qw', ...Array.from({ length: dof }, (_, i) => `seed${i}`)];
  const missing = need.filter((h) => !col.has(h));
  if (dof === 0 || missing.length)
    return {
      ok: false,
      error: `header lacks ${dof === 0 ? 'q0..' : ''}${missing.join(', ')} (expected case,q0..qN,px,py,pz,qx,qy,qz,qw,seed0..seedN)`,
    };
  const at = (name: string): number => col.get(name)!;
  const cases: IkCase[] = [];
  for (let li = 1; li < lines.length; li++) {
    const v = lines[li].split(',').map(Number);
    if (v.length !== header.length || !v.every(Number.isFinite))
      return { ok: false, error: `line ${li + 1}: expected ${header.length} finite numbers` };
    const quat = [at('qx'), at('qy'), at('qz'), at('qw')].map((i) => v[i]);
    const norm = Math.hypot(quat[0], quat[1], quat[2], quat[3]);
    if (!(norm >= 0.99 && norm <= 1.01))
      return { ok: false, error: `line ${li + 1}: quaternion norm ${norm} is outside [0.99, 1.01]` };
    cases.push({
      id: v[at('case')],
      truth: Float64Array.from({ length: dof }, (_, i) => v[at(`q${i}`)]),
      target: fromPose(
        [v[at('px')], v[at('py')], v[at('pz')]],
        quat.map((x) => x / norm),
      ),
      seed: Float64Array.from({ length: dof }, (_, i) => v[at(`seed${i}`)]),
    });
  }
  return { ok: true, dof, cases };
}
