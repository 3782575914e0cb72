// Turns a model's reply into one typed, normalised ToolCall, or into a rejection whose message
// names the problem so the model can correct it (nothing is executed on a rejection).
import { formatIssues } from '../common/validation/issue.js';
import { type Check, compileSchema } from '../common/validation/json-schema.js';
import { closest } from '../common/validation/values.js';
import type { PoseTarget } from '../motion/planner/planner.js';
import { extractCall, type CallSource, type RejectCode } from './extract.js';
import {
  MAX_REACH_M,
  QUAT_NORM_RANGE,
  TOOL_NAMES,
  toolDefinitions,
  type ToolDefinition,
  type ToolName,
} from './schemas.js';

/** A pose per arm name, already the planner's target shape (position in metres in the robot base
 *  or setup frame, unit quaternion [x, y, z, w]); null holds that arm. Single-arm robots have one key. */
export type ArmTargets = Record<string, PoseTarget | null>;

export type ToolCall = { id: string | null; source: CallSource } & (
  | { tool: 'move_to'; target: ArmTargets; note?: string }
  | { tool: 'move_eef_chunk' | 'check_path'; targets: ArmTargets[]; note?: string }
  | { tool: 'set_gripper'; gripper: Record<string, number | null>; note?: string }
  | { tool: 'get_state' | 'stop' }
  | { tool: 'done'; summary: string; hindsight?: string }
);

export type ToolResult = { ok: true; call: ToolCall } | { ok: false; code: RejectCode; message: string };

const AFTER = 'Nothing was executed; reply with one corrected tool call.';

export class ToolValidator {
  readonly definitions: ToolDefinition[];
  private readonly checks: Map<string, Check>;

  /** arms: the robot's arm names in config order (one name for a single-arm robot). */
  constructor(readonly arms: readonly string[]) {
    this.definitions = toolDefinitions(arms);
    this.checks = new Map(this.definitions.map((d) => [d.name, compileSchema(d.parameters)]));
  }

  validate(reply: unknown): ToolResult {
    const found = extractCall(reply);
    if (!found.ok) return reject(found.code, found.message);
    const { name, id, source } = found.call;
    const check = this.checks.get(name);
    if (!check) return reject('unknown_tool', unknownTool(name));
    const args = found.call.args === undefined ? {} : found.call.args;
    const issues = check(args);
    if (issues.length) return reject('arguments', formatIssues(issues.slice(0, 3), { root: name }));
    const a = args as Record<string, unknown>;
    const problems: string[] = [];
    const base = { id, source };
    let call: ToolCall;
    switch (name as ToolName) {
      case 'move_to':
        call = { ...base, tool: 'move_to', target: this.targets(a.target, `${name}.target`, problems), ...noteOf(a) };
        break;
      case 'move_eef_chunk':
      case 'check_path': {
        const poses = a.poses as unknown[];
        call = {
          ...base,
          tool: name as 'move_eef_chunk',
          targets: poses.map((p, i) => this.targets(p, `${name}.poses[${i}]`, problems)),
          ...noteOf(a),
        };
        break;
      }
      case 'set_gripper': {
        const g =
          this.arms.length === 1
            ? { [this.arms[0]!]: a.gripper as number }
            : (a.positions as Record<string, number | null>);
        if (Object.values(g).every((v) => v === null))
          problems.push(`${name}.positions: at least one gripper must be set (null holds it)`);
        call = { ...base, tool: 'set_gripper', gripper: { ...g }, ...noteOf(a) };
        break;
      }
      case 'done':
        call = {
          ...base,
          tool: 'done',
          summary: a.summary as string,
          ...(a.hindsight !== undefined ? { hindsight: a.hindsight as string } : {}),
        };
        break;
      default:
        call = { ...base, tool: name as 'get_state' | 'stop' };
    }
    if (problems.length) return reject('arguments', problems.slice(0, 3).join('; '));
    return { ok: true, call };
  }

  /** A schema-valid target → poses per arm, range-checked and with normalised quaternions. */
  private targets(v: unknown, path: string, problems: string[]): ArmTargets {
    if (this.arms.length === 1) return { [this.arms[0]!]: pose(v, path, problems) };
    const o = v as Record<string, unknown>;
    const out: ArmTargets = {};
    for (const arm of this.arms) out[arm] = o[arm] === null ? null : pose(o[arm], `${path}.${arm}`, problems);
    if (Object.values(out).every((p) => p === null))
      problems.push(`${path}: at least one arm must have a pose (null holds an arm)`);
    return out;
  }
}

/** pose_xyzquat [x, y, z, qx, qy, qz, qw] → the planner's target, the one place the shape changes. */
function pose(v: unknown, path: string, problems: string[]): PoseTarget {
  const a = (v as { pose_xyzquat: number[] }).pose_xyzquat;
  a.slice(0, 3).forEach((x, i) => {
    if (Math.abs(x) > MAX_REACH_M)
      problems.push(
        `${path}.pose_xyzquat[${i}] (${'xyz'[i]}): must be within ±${MAX_REACH_M} m of the robot base (got ${x})`,
      );
  });
  const q = a.slice(3) as [number, number, number, number];
  const n = Math.hypot(...q);
  if (!(n >= QUAT_NORM_RANGE[0] && n <= QUAT_NORM_RANGE[1])) {
    problems.push(
      `${path}.pose_xyzquat[3..6]: quaternion norm ${+n.toPrecision(4)} is outside [${QUAT_NORM_RANGE.join(', ')}]; send a unit quaternion [qx, qy, qz, qw]`,
    );
  }
  return { position: [a[0]!, a[1]!, a[2]!], orientation: q.map((c) => c / n) };
}

function noteOf(a: Record<string, unknown>): { note?: string } {
  return a.note === undefined ? {} : { note: a.note as string };
}

function reject(code: RejectCode, problem: string): ToolResult {
  return { ok: false, code, message: `Rejected: ${problem}. ${AFTER}` };
}

/** The refusal of a tool name that is not one of `names` (the robot's tools; an episode adds its loop tools). */
export function unknownTool(name: string, names: readonly string[] = TOOL_NAMES): string {
  const plain = name
    .normalize('NFKC')
    .replace(/[\u200b-\u200f\u2060\ufeff]/g, '')
    .trim()
    .toLowerCase();
  const near = names.find((t) => t === plain) ?? closest(plain, names, () => 2);
  return `unknown tool ${JSON.stringify(name)}; the tools are ${names.join(', ')}${near ? ` (did you mean ${near}?)` : ''}`;
}
