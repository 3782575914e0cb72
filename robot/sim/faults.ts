// Fault injection for the simulated controller. A fault is `KIND[,key=value...]`, e.g.
// `stall,arm=left,joint=2,at=1,for=2`; `at`/`for` are seconds after the simulator starts.
//   disconnect       the link drops without a goodbye (the broker sends the last will)
//   stall            one joint stops moving (joint = index or name; arm defaults to the first)
//   tracking         one joint follows its reference off by `offset` rad (default 0.2)
//   drop             each message in or out (state, events, commands) is lost with probability p
//   delay            state messages leave `s` seconds late (default 0.3)
//   late             trajectory and gripper commands are handled `s` seconds after they arrive

import { Prng } from '../common/prng.js';

export type FaultKind = 'disconnect' | 'stall' | 'tracking' | 'drop' | 'delay' | 'late';

export interface Fault {
  kind: FaultKind;
  at: number;
  for: number;
  arm?: string;
  joint?: number | string;
  offset: number;
  p: number;
  s: number;
}

const KINDS: readonly FaultKind[] = ['disconnect', 'stall', 'tracking', 'drop', 'delay', 'late'];
const KEYS: Record<FaultKind, readonly string[]> = {
  disconnect: ['at', 'for'],
  stall: ['at', 'for', 'arm', 'joint'],
  tracking: ['at', 'for', 'arm', 'joint', 'offset'],
  drop: ['at', 'for', 'p'],
  delay: ['at', 'for', 's'],
  late: ['at', 'for', 's'],
};

/** Parses one fault spec; throws an Error naming the key, the rule and the value. */
export function parseFault(spec: string): Fault {
  const [kind, ...pairs] = spec.split(',').map((p) => p.trim());
  if (!KINDS.includes(kind as FaultKind))
    throw new Error(`fault "${spec}": kind must be one of ${KINDS.join(', ')} (got "${kind}")`);
  const f: Fault = { kind: kind as FaultKind, at: 0, for: Infinity, offset: 0.2, p: 0.5, s: 0.3 };
  for (const pair of pairs) {
    const eq = pair.indexOf('=');
    const key = eq < 0 ? pair : pair.slice(0, eq);
    const value = eq < 0 ? '' : pair.slice(eq + 1);
    if (!KEYS[f.kind].includes(key))
      throw new Error(`fault "${spec}": key "${key}" is not one of ${KEYS[f.kind].join(', ')} for ${f.kind}`);
    if (key === 'arm') f.arm = value;
    else if (key === 'joint') f.joint = /^\d+$/.test(value) ? Number(value) : value;
    else {
      const n = Number(value);
      const ok = value !== '' && Number.isFinite(n) && (key === 'offset' || n >= 0) && (key !== 'p' || n <= 1);
      const rule =
        key === 'p' ? 'a probability in [0, 1]' : key === 'offset' ? 'a finite number (rad)' : 'a number ≥ 0 (s)';
      if (!ok) throw new Error(`fault "${spec}": ${key} must be ${rule} (got "${value}")`);
      f[key as 'at' | 'for' | 'offset' | 'p' | 's'] = n;
    }
  }
  if ((f.kind === 'stall' || f.kind === 'tracking') && f.joint === undefined)
    throw new Error(`fault "${spec}": joint is required for ${f.kind}`);
  return f;
}

/** True while the fault acts, `elapsed` seconds after the simulator started. */
export function isActive(f: Fault, elapsed: number): boolean {
  return elapsed >= f.at && elapsed < f.at + f.for;
}

export interface JointFaults {
  /** Joints that do not move at all. */
  stalled: ReadonlySet<number>;
  /** Per-joint offset added to the reference the joint follows (rad); null = none. */
  offset: readonly number[] | null;
}

/** The faults of one simulator run, bound to its arms and its start time t0. */
export class FaultSchedule {
  private readonly joints = new Map<string, { fault: Fault; joint: number }[]>();
  private readonly rng: Prng;

  /** arms: name → joint names, first arm first; throws when a fault names an unknown arm or joint. */
  constructor(
    private readonly faults: readonly Fault[],
    arms: ReadonlyMap<string, readonly string[]>,
    private readonly t0: number,
    seed: number,
  ) {
    this.rng = new Prng(seed);
    for (const f of faults) {
      if (f.kind !== 'stall' && f.kind !== 'tracking') continue;
      const arm = f.arm ?? arms.keys().next().value!;
      const names = arms.get(arm);
      if (!names) throw new Error(`fault ${f.kind}: arm must be one of ${[...arms.keys()].join(', ')} (got "${arm}")`);
      const joint = typeof f.joint === 'number' ? f.joint : names.indexOf(f.joint!);
      if (joint < 0 || joint >= names.length) {
        throw new Error(
          `fault ${f.kind}: joint must be an index below ${names.length} or one of ${names.join(', ')} (got "${f.joint}")`,
        );
      }
      this.joints.set(arm, [...(this.joints.get(arm) ?? []), { fault: f, joint }]);
    }
  }

  /** False while a `disconnect` fault holds the link down. */
  linkUp(now: number): boolean {
    return !this.active(now).some((f) => f.kind === 'disconnect');
  }

  /** Draws whether a message is lost now (true only under a `drop` fault). */
  dropped(now: number): boolean {
    const drop = this.active(now).find((f) => f.kind === 'drop');
    return drop !== undefined && this.rng.next() < drop.p;
  }

  /** Seconds by which a state message sampled now leaves late. */
  stateDelay(now: number): number {
    return this.active(now).find((f) => f.kind === 'delay')?.s ?? 0;
  }

  /** Seconds by which a trajectory or gripper command arriving now is handled late. */
  commandDelay(now: number): number {
    return this.active(now).find((f) => f.kind === 'late')?.s ?? 0;
  }

  jointFaults(arm: string, now: number): JointFaults {
    const stalled = new Set<number>();
    let offset: number[] | null = null;
    for (const { fault, joint } of this.joints.get(arm) ?? []) {
      if (!isActive(fault, now - this.t0)) continue;
      if (fault.kind === 'stall') stalled.add(joint);
      else {
        offset ??= [];
        offset[joint] = (offset[joint] ?? 0) + fault.offset;
      }
    }
    return { stalled, offset };
  }

  private active(now: number): Fault[] {
    return this.faults.filter((f) => isActive(f, now - this.t0));
  }
}
