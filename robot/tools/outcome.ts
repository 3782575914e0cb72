// What a tool call comes back with: one JSON object for the app and for the model. `message`
// is the sentence a model reads; the fields carry the same facts for programs.
import type { StateMsg } from '../link/protocol.js';
import type { RobotModel } from './robot-model.js';
import type { ToolName } from './schemas.js';

/**
 * ok: the call did what it asked. rejected: the call was malformed (validator). busy: an arm
 * it needs is moving. unavailable: the controller is offline, mismatched or stale. infeasible:
 * no safe plan. failed: execution went wrong (controller refused or aborted, tracking error,
 * link lost, no settling). stopped: a stop ended it.
 */
export type OutcomeStatus = 'ok' | 'rejected' | 'busy' | 'unavailable' | 'infeasible' | 'failed' | 'stopped';

export interface ArmReport {
  /** Measured joints (rad or m) and velocities, in the description's joint order. */
  q: number[];
  dq: number[];
  /** 0 = closed … 1 = open; null without a gripper. */
  gripper: number | null;
  /** TCP pose [x, y, z, qx, qy, qz, qw] by FK of the measured joints (robot base or setup frame). */
  tcp: number[];
  mode: string;
  faults: string[];
  /** For an arm that was asked to move: distance of the measured TCP from its last target. */
  pose_error?: { position_m: number; rotation_deg: number };
  settled?: boolean;
}

export interface ToolOutcome {
  call_id: string;
  tool: ToolName | null;
  ok: boolean;
  status: OutcomeStatus;
  /** A code for programs when not ok (e.g. tracking_error, stale_state, start_mismatch). */
  reason?: string;
  message: string;
  /** For move_to / move_eef_chunk: reached (and settled at) the last target. */
  reached?: boolean;
  /** Seconds from the call to this outcome. */
  duration_s?: number;
  /** check_path and moves: planned motion time (s, without the final hold) and reference points. */
  plan?: { duration_s: number; points: number };
  arms?: Record<string, ArmReport>;
  /** For set_gripper: the commanded openings. */
  gripper?: Record<string, number | null>;
  /** For set_gripper that arrived: per commanded arm, whether the gripper stopped on an object. */
  grasped?: Record<string, boolean>;
  /** done: the model's summary (its outcome is re-checked by whoever reads the state, not assumed). */
  summary?: string;
  /** Milliseconds from the call to the plan and to the trajectories being handed to the transport. */
  timing_ms?: { plan: number; publish?: number };
}

/** Per-arm report from a state message (arms named in `only`, or all). */
export function armReports(
  model: RobotModel,
  state: StateMsg | null,
  only?: readonly string[],
): Record<string, ArmReport> | undefined {
  if (!state) return undefined;
  const out: Record<string, ArmReport> = {};
  for (const arm of model.armNames) {
    const s = state.arms[arm];
    if (!s || (only && !only.includes(arm))) continue;
    out[arm] = {
      q: s.q,
      dq: s.dq,
      gripper: s.gripper,
      tcp: model.tcpPose(arm, s.q).map(round6),
      mode: s.mode,
      faults: s.faults,
    };
  }
  return out;
}

export const round6 = (x: number) => Math.round(x * 1e6) / 1e6;
export const mmText = (m: number) => `${(m * 1000).toFixed(1)} mm`;
export const degText = (rad: number) => `${((rad * 180) / Math.PI).toFixed(2)}°`;
