// Multi-arm setup config (parsed YAML) → SetupDescription: named arms, each a robot config
// placed by a base pose in one world frame, plus the world workspace, table and arm-arm clearance.
import { fromXyzRpy, identity } from '../math/transform.js';
import { formatIssue } from '../common/validation/issue.js';
import { isRecord } from '../common/validation/values.js';
import { Checker } from './checker.js';
import { readBox, readPlane } from './robot-config.js';
import { readHeld, readObstacles } from './obstacles-config.js';
import type { ArmPlacement, RobotDescription, SetupDescription, Validated } from './types.js';

/** The arm name of a single robot seen as a one-arm setup (the tools' arm name too). */
export const SINGLE_ARM = 'arm';

/** A single robot as a one-arm setup in its own base frame, with its own workspace and table. */
export function singleArmSetup(robot: RobotDescription): SetupDescription {
  return {
    name: robot.name,
    summary: robot.summary,
    arms: [{ name: SINGLE_ARM, robot, base: identity() }],
    minClearance: 0,
    workspace: robot.workspace,
    table: robot.table,
    obstacles: [],
    obstacleClearance: 0,
  };
}

export function isSetupConfig(raw: unknown): boolean {
  return isRecord(raw) && 'arms' in raw;
}

export function parseSetupConfig(
  raw: unknown,
  loadRobot: (name: string) => Validated<RobotDescription>,
): Validated<SetupDescription> {
  const name = isRecord(raw) && typeof raw.name === 'string' ? raw.name : '?';
  const c = new Checker(name);
  if (!isRecord(raw)) {
    c.issue('config', raw, 'must be a mapping');
    return { ok: false, issues: c.issues };
  }
  c.string(raw, 'name', 'name', /^[a-z0-9][a-z0-9_-]*$/);
  c.knownKeys(
    raw,
    ['name', 'description', 'arms', 'min_clearance_m', 'workspace', 'table', 'obstacles', 'obstacle_clearance_m'],
    '',
  );
  const arms: ArmPlacement[] = [];
  const list = raw.arms;
  if (!Array.isArray(list) || list.length < 1) c.issue('arms', list, 'must be a non-empty list of {name, robot, base}');
  const names = new Set<string>();
  (Array.isArray(list) ? list : []).forEach((item, i) => {
    const q = `arms[${i}]`;
    if (!isRecord(item)) {
      c.issue(q, item, 'must be a mapping');
      return;
    }
    c.knownKeys(item, ['name', 'robot', 'base', 'tcp', 'held'], `${q}.`);
    const arm = c.string(item, 'name', `${q}.name`, /^[a-z0-9][a-z0-9_-]*$/);
    if (names.has(arm)) c.issue(`${q}.name`, arm, 'must be unique');
    names.add(arm);
    const robotName = c.string(item, 'robot', `${q}.robot`);
    const baseSec = c.section(item, 'base', `${q}.`, true) ?? {};
    c.knownKeys(baseSec, ['xyz', 'rpy'], `${q}.base.`);
    const base = fromXyzRpy(
      c.triple(baseSec, 'xyz', `${q}.base.xyz`),
      c.triple(baseSec, 'rpy', `${q}.base.rpy`, [0, 0, 0]),
    );
    if (!robotName) return;
    const r = loadRobot(robotName);
    if (!r.ok) {
      for (const issue of r.issues)
        c.issues.push({
          path: c.path(`${q}.robot`),
          rule: 'must name a valid robot config',
          value: robotName,
          hint: formatIssue(issue),
        });
      return;
    }
    const held = readHeld(c, item.held, `${q}.held`);
    const tcpSec = c.section(item, 'tcp', `${q}.`, false);
    if (tcpSec) c.knownKeys(tcpSec, ['xyz', 'rpy'], `${q}.tcp.`);
    // A tool of this station's arm: its TCP replaces the robot config's (flange → tool centre point).
    const robot = tcpSec
      ? {
          ...r.value,
          tcp: fromXyzRpy(c.triple(tcpSec, 'xyz', `${q}.tcp.xyz`), c.triple(tcpSec, 'rpy', `${q}.tcp.rpy`, [0, 0, 0])),
        }
      : r.value;
    arms.push({ name: arm, robot, base, ...(held && { held }) });
  });
  const setup: SetupDescription = {
    name,
    summary: c.optionalString(raw, 'description', 'description'),
    arms,
    minClearance: c.number(raw, 'min_clearance_m', 'min_clearance_m', { min: 0 }),
    workspace: readBox(c, raw, 'workspace') ?? { min: [0, 0, 0], max: [0, 0, 0] },
    table: readPlane(c, raw, 'table') ?? { normal: [0, 0, 1], offset: 0 },
    obstacles: readObstacles(c, raw.obstacles),
    obstacleClearance: c.number(raw, 'obstacle_clearance_m', 'obstacle_clearance_m', { min: 0 }, 0),
  };
  return c.issues.length ? { ok: false, issues: c.issues } : { ok: true, value: setup };
}
