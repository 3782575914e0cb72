// Checks of one sample against the scene: the TCP and link capsules against the workspace box,
// the table plane (with the start allowance), the setup's and the simulated scene's obstacles,
// and a held object against workspace, table, obstacles and the other arm.
import type { HeldObject } from '../description/types.js';
import { heldLink, heldNearest } from './held-object.js';
import { obstacleDistance } from './obstacle-distance.js';
import { obstacleSolid } from '../sim/scene/geometry.js';
import { REST_SLACK, heldBodyBottom, heldBodyDepth } from './scene-bodies.js';
import { segmentDistance } from './segment-distance.js';
import { type ArmSafetyModel, type SafetyEnvelope, type SafetyViolation, pointOutside } from './trajectory-check.js';
import { START_DEPTH_LIMIT, type StartAllowance } from './start-allowance.js';
import { startNote } from './joint-limits.js';

const tcpPoint = new Float64Array(3);
/** A part's reach past the workspace box [0] and below the table plane [1] (m, ≤ 0 inside). */
const reach = new Float64Array(2);

function reachOf(env: SafetyEnvelope, x: number, y: number, z: number, r: number): void {
  const { min, max } = env.workspace;
  const out = Math.max(min[0] + r - x, x + r - max[0], min[1] + r - y, y + r - max[1], min[2] + r - z, z + r - max[2]);
  const n = env.table.normal;
  reach[0] = Math.max(reach[0], out);
  reach[1] = Math.max(reach[1], env.table.offset + r - (n[0] * x + n[1] * y + n[2] * z));
}

/**
 * The TCP's, then the first capsule's, reach past the workspace box or the table plane at sample
 * k that `allow` (items: 2 per part, the TCP first) does not tolerate.
 */
export function boundaryHit(
  arm: ArmSafetyModel,
  tcp: Float64Array,
  env: SafetyEnvelope,
  k: number,
  allow: StartAllowance,
): SafetyViolation | undefined {
  const c = arm.capsules;
  for (let p = 0; p <= c.count; p++) {
    reach[0] = reach[1] = -Infinity;
    if (p === 0) reachOf(env, tcp[3], tcp[7], tcp[11], 0);
    else
      for (let e = (p - 1) * 6; e < p * 6; e += 3)
        reachOf(env, c.world[e], c.world[e + 1], c.world[e + 2], c.radius[p - 1]);
    for (let w = 0; w < 2; w++) {
      const d = reach[w];
      const verdict = allow.admit(2 * p + w, k, d > 0, d, START_DEPTH_LIMIT);
      if (verdict === 'clear' || verdict === 'tolerated') continue;
      return {
        code: w === 0 ? 'workspace' : 'table',
        arm: arm.name,
        link: p === 0 ? 'tcp' : c.links[p - 1],
        sample: k,
        distance: d,
        ...startNote(verdict, allow.allowed[2 * p + w], START_DEPTH_LIMIT),
      };
    }
  }
  return undefined;
}

/** The TCP's, then the first capsule's, obstacle closer than the clearance at sample k. */
export function obstacleHit(
  arm: ArmSafetyModel,
  tcp: Float64Array,
  env: SafetyEnvelope,
  k: number,
): SafetyViolation | undefined {
  const obstacles = env.obstacles ?? [];
  const clearance = env.obstacleClearance ?? 0;
  const c = arm.capsules;
  tcpPoint[0] = tcp[3];
  tcpPoint[1] = tcp[7];
  tcpPoint[2] = tcp[11];
  for (const o of obstacles) {
    const d = obstacleDistance(tcpPoint, 0, 0, 0, o);
    if (d < clearance)
      return { code: 'obstacle', arm: arm.name, link: 'tcp', obstacle: o.name, sample: k, distance: d, clearance };
  }
  for (let i = 0; i < c.count; i++) {
    for (const o of obstacles) {
      const d = obstacleDistance(c.world, i * 6, i * 6 + 3, c.radius[i], o);
      if (d < clearance)
        return {
          code: 'obstacle',
          arm: arm.name,
          link: c.links[i],
          obstacle: o.name,
          sample: k,
          distance: d,
          clearance,
        };
    }
  }
  return undefined;
}

/** How far the placed held capsule w reaches below the table plane (m, 0 when clear of it). */
export function heldTableDepth(held: HeldObject, w: Float64Array, env: SafetyEnvelope): number {
  const n = env.table.normal;
  let depth = 0;
  for (let e = 0; e < 6; e += 3)
    depth = Math.max(depth, env.table.offset + held.radius - (n[0] * w[e] + n[1] * w[e + 1] + n[2] * w[e + 2]));
  return depth;
}

/**
 * A held object leaving the workspace, crossing the table or nearing an obstacle at sample k. It
 * may reach `tableDepth` below the table (where it started: an object just grasped off the table
 * has its envelope in it) but no deeper. A held scene object (arm.heldBody) is measured against
 * the table by its exact shape, and is clear of an obstacle it rests on top of (REST_SLACK).
 */
export function heldOutside(
  arm: ArmSafetyModel,
  held: HeldObject,
  w: Float64Array,
  tcp: Float64Array,
  env: SafetyEnvelope,
  k: number,
  tableDepth = 0,
): SafetyViolation | undefined {
  const link = heldLink(held);
  const body = arm.heldBody;
  for (let e = 0; e < 6; e += 3) {
    const o = pointOutside(env, w[e], w[e + 1], w[e + 2], held.radius);
    if (o && !(o.code === 'table' && (body || o.distance <= tableDepth + 1e-9)))
      return { code: o.code, arm: arm.name, link, sample: k, distance: o.distance };
  }
  if (body) {
    const depth = heldBodyDepth(body, tcp, env);
    if (depth > Math.max(tableDepth, REST_SLACK))
      return { code: 'table', arm: arm.name, link, sample: k, distance: depth };
  }
  const bottom = body ? heldBodyBottom(body, tcp) : -Infinity;
  const clearance = env.obstacleClearance ?? 0;
  for (const o of env.obstacles ?? []) {
    const d = obstacleDistance(w, 0, 3, held.radius, o);
    if (d < clearance && bottom < obstacleSolid(o).zMax + clearance - REST_SLACK)
      return { code: 'obstacle', arm: arm.name, link, obstacle: o.name, sample: k, distance: d, clearance };
  }
  return undefined;
}

/** The closest pair involving a held object of arm a or b: held–capsule either way, or held–held. */
export function heldArmDistance(
  a: ArmSafetyModel,
  wa: Float64Array,
  b: ArmSafetyModel,
  wb: Float64Array,
): { links: [string, string]; distance: number } {
  let best: { links: [string, string]; distance: number } = { links: ['', ''], distance: Infinity };
  if (a.held) {
    const n = heldNearest(wa, a.held.radius, b.capsules);
    if (n.distance < best.distance) best = { links: [heldLink(a.held), n.link], distance: n.distance };
  }
  if (b.held) {
    const n = heldNearest(wb, b.held.radius, a.capsules);
    if (n.distance < best.distance) best = { links: [n.link, heldLink(b.held)], distance: n.distance };
  }
  if (a.held && b.held) {
    const d = segmentDistance(wa, 0, 3, wb, 0, 3) - a.held.radius - b.held.radius;
    if (d < best.distance) best = { links: [heldLink(a.held), heldLink(b.held)], distance: d };
  }
  return best;
}
