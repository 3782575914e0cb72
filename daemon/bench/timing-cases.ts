// Timing benchmark cases read from CSV text, the format told apart by the header:
//   ruckig-1dof   case,d,vmax,amax,jmax,duration[,result,t0..t6,limits,…]  (Ruckig oracle)
//   multi-joint   case,d0..dN,vmax0..N,amax0..N,jmax0..N,duration         (synchronised move)
//   moving-start  case,d,vmax,amax,jmax,v0,a0,duration                    (start in motion)
import { JerkProfile, type TimingCode } from '../../robot/motion/timing/profile.js';
import { restToRest } from '../../robot/motion/timing/rest-to-rest.js';
import { movingToRest } from '../../robot/motion/timing/moving-start.js';
import { syncRestToRest } from '../../robot/motion/timing/joint-move.js';

export type CaseFormat = 'ruckig-1dof' | 'multi-joint' | 'moving-start';

export interface TimingCases {
  format: CaseFormat;
  count: number;
  /** Joints per case (1 except multi-joint); per-joint columns are case-major. */
  joints: number;
  ids: string[];
  d: Float64Array;
  vmax: Float64Array;
  amax: Float64Array;
  jmax: Float64Array;
  /** Moving-start only (else zeros). */
  v0: Float64Array;
  a0: Float64Array;
  duration: Float64Array;
  /** Ruckig files only: phase durations (count × 7) and limits class per case. */
  phases?: Float64Array;
  limits?: string[];
}

export type ParseResult = { ok: true; cases: TimingCases } | { ok: false; message: string };

export function parseTimingCases(text: string): ParseResult {
  const lines = text.split(/\r?\n/).filter((l) => l.trim() !== '');
  if (lines.length < 2) return { ok: false, message: 'cases file needs a header line and at least one case' };
  const header = lines[0].split(',').map((h) => h.trim());
  const col = (name: string): number => header.indexOf(name);
  let format: CaseFormat,
    joints = 1;
  if (header[1] === 'd0') {
    format = 'multi-joint';
    while (col(`d${joints}`) >= 0) joints++;
  } else if (col('v0') >= 0 && col('a0') >= 0) format = 'moving-start';
  else format = 'ruckig-1dof';
  const hasPhases = format === 'ruckig-1dof' && col('t0') >= 0 && col('limits') >= 0;
  const names = columnNames(format, joints, hasPhases);
  const idx = names.map(col);
  const missing = names.filter((_, i) => idx[i] < 0);
  if (col('case') !== 0 || missing.length > 0) {
    const need = missing.join(', ') || 'its columns';
    return {
      ok: false,
      message: `header must start with "case" and name ${need} (${format} format), got "${lines[0]}"`,
    };
  }
  const n = lines.length - 1;
  const perJoint = (): Float64Array => new Float64Array(n * joints);
  const cases: TimingCases = {
    format,
    count: n,
    joints,
    ids: [],
    d: perJoint(),
    vmax: perJoint(),
    amax: perJoint(),
    jmax: perJoint(),
    v0: new Float64Array(n),
    a0: new Float64Array(n),
    duration: new Float64Array(n),
  };
  if (hasPhases) {
    cases.phases = new Float64Array(n * 7);
    cases.limits = [];
  }
  const limitsCol = col('limits');
  for (let r = 0; r < n; r++) {
    const cells = lines[r + 1].split(',');
    cases.ids.push(cells[0]);
    const values: number[] = [];
    for (let i = 0; i < names.length; i++) {
      const x = Number(cells[idx[i]]);
      if (cells[idx[i]] === undefined || cells[idx[i]].trim() === '' || !Number.isFinite(x)) {
        return {
          ok: false,
          message: `line ${r + 2}: column ${names[i]} must be a finite number, got "${cells[idx[i]] ?? ''}"`,
        };
      }
      values.push(x);
    }
    let v = 0;
    for (const arr of [cases.d, cases.vmax, cases.amax, cases.jmax])
      for (let j = 0; j < joints; j++) arr[r * joints + j] = values[v++];
    if (format === 'moving-start') {
      cases.v0[r] = values[v++];
      cases.a0[r] = values[v++];
    }
    cases.duration[r] = values[v++];
    if (cases.phases && cases.limits) {
      for (let i = 0; i < 7; i++) cases.phases[r * 7 + i] = values[v++];
      cases.limits.push((cells[limitsCol] ?? '').trim());
    }
  }
  return { ok: true, cases };
}

/** Numeric columns in the order they are stored: limits (per joint), start state, duration, phases. */
function columnNames(format: CaseFormat, joints: number, phases: boolean): string[] {
  const names: string[] = [];
  for (const k of ['d', 'vmax', 'amax', 'jmax']) {
    if (format === 'multi-joint') for (let j = 0; j < joints; j++) names.push(`${k}${j}`);
    else names.push(k);
  }
  if (format === 'moving-start') names.push('v0', 'a0');
  names.push('duration');
  if (phases) for (let i = 0; i < 7; i++) names.push(`t${i}`);
  return names;
}

/** Reusable buffers for solving cases without allocation. */
export class CaseSolver {
  readonly profiles: JerkProfile[];
  private readonly code: TimingCode[] = ['ok'];

  constructor(joints: number) {
    this.profiles = Array.from({ length: joints }, () => new JerkProfile());
  }

  /** Solves case i; returns its duration, or NaN when the solver rejects the inputs. */
  solve(c: TimingCases, i: number): number {
    const p = this.profiles[0];
    if (c.format === 'ruckig-1dof') {
      return restToRest(c.d[i], c.vmax[i], c.amax[i], c.jmax[i], p) === 'ok' ? p.duration : NaN;
    }
    if (c.format === 'moving-start') {
      const code = movingToRest(c.d[i], c.v0[i], c.a0[i], c.vmax[i], c.amax[i], c.jmax[i], p);
      return code === 'ok' ? p.duration : NaN;
    }
    const T = syncRestToRest(c.joints, i * c.joints, c.d, c.vmax, c.amax, c.jmax, this.profiles, this.code);
    return T >= 0 ? T : NaN;
  }
}
