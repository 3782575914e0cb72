// The `cameras` list of a scene file: resolution, intrinsics (fx/fy/cx/cy or a horizontal field
// of view), mount (world or an arm's link) and the mount-from-optical pose (rpy or look_at).
import { isRecord } from '../../common/validation/values.js';
import type { Checker, Obj } from '../../description/checker.js';
import type { SetupDescription, Triple } from '../../description/types.js';
import { fromXyzRpy, type Transform } from '../../math/transform.js';
import { NAME_PATTERN } from './predicate-text.js';
import type { SceneCamera } from './types.js';

const KEYS = ['name', 'resolution', 'fx', 'fy', 'cx', 'cy', 'fov_deg', 'mount', 'xyz', 'rpy', 'look_at'];
const MORE_KEYS = ['rate_hz', 'encoding', 'depth'];
const INTRINSICS = ['fx', 'fy', 'cx', 'cy'] as const;
/** Largest image side: bounds the memory of one frame. */
export const MAX_RESOLUTION = 4096;
export const DEFAULT_RATE_HZ = 10;

/**
 * Reads `cameras` (absent = none). Link mounts are checked against `setup`'s arms when it loaded;
 * `arm` may be left out when the setup has one arm.
 */
export function readCameras(c: Checker, list: unknown, setup: SetupDescription | undefined): SceneCamera[] {
  const out: SceneCamera[] = [];
  c.forEachItem(list, 'cameras', '{name, resolution, …}', (item, q) => {
    c.knownKeys(item, [...KEYS, ...MORE_KEYS], `${q}.`);
    const name = c.string(item, 'name', `${q}.name`, NAME_PATTERN);
    const [width, height] = readResolution(c, item.resolution, `${q}.resolution`);
    const given: string[] = INTRINSICS.filter((k) => item[k] !== undefined);
    let [fx, fy, cx, cy] = INTRINSICS.map((k) => c.number(item, k, `${q}.${k}`, k[0] === 'f' ? { gt: 0 } : {}, NaN));
    if (item.fov_deg !== undefined && given.length === 0) {
      const fov = c.number(item, 'fov_deg', `${q}.fov_deg`, { gt: 0 });
      if (fov >= 180) c.issue(`${q}.fov_deg`, fov, 'must be < 180');
      fx = fy = width / 2 / Math.tan((fov * Math.PI) / 360);
      [cx, cy] = [width / 2, height / 2];
    } else if (given.length !== 4 || item.fov_deg !== undefined)
      c.issue(
        `${q}`,
        given.concat(item.fov_deg === undefined ? [] : ['fov_deg']),
        'must give either fov_deg or all of fx, fy, cx, cy',
      );
    out.push({
      name,
      width,
      height,
      fx: fx!,
      fy: fy!,
      cx: cx!,
      cy: cy!,
      mount: readMount(c, item.mount, `${q}.mount`, setup),
      pose: readPose(c, item, q),
      rate: c.number(item, 'rate_hz', `${q}.rate_hz`, { min: 0 }, DEFAULT_RATE_HZ),
      encoding: c.oneOf(item, 'encoding', `${q}.encoding`, ['jpeg', 'png'] as const, 'jpeg'),
      depth: readBool(c, item, 'depth', `${q}.depth`, false),
    });
  });
  return out;
}

function readResolution(c: Checker, v: unknown, q: string): [number, number] {
  const ok = (x: unknown): x is number => Number.isInteger(x) && (x as number) >= 1 && (x as number) <= MAX_RESOLUTION;
  if (!Array.isArray(v) || v.length !== 2 || !v.every(ok)) {
    c.issue(q, v, `must be [width, height], integers in 1..${MAX_RESOLUTION}`);
    return [1, 1];
  }
  return [v[0], v[1]];
}

function readBool(c: Checker, obj: Obj, key: string, q: string, fallback: boolean): boolean {
  const v = obj[key];
  if (v === undefined) return fallback;
  if (typeof v !== 'boolean') c.issue(q, v, 'must be true or false');
  return v === true;
}

function readMount(c: Checker, v: unknown, q: string, setup: SetupDescription | undefined): SceneCamera['mount'] {
  if (v === undefined || v === 'world') return { kind: 'world' };
  if (!isRecord(v)) {
    c.issue(q, v, 'must be "world" or {arm, link}');
    return { kind: 'world' };
  }
  c.knownKeys(v, ['arm', 'link'], `${q}.`);
  const only = setup?.arms.length === 1 ? setup.arms[0]!.name : undefined;
  const arm = v.arm === undefined && only ? only : c.string(v, 'arm', `${q}.arm`);
  const link = c.string(v, 'link', `${q}.link`);
  const placed = setup?.arms.find((a) => a.name === arm);
  if (setup && arm && !placed)
    c.issue(`${q}.arm`, arm, `must name an arm of robot "${setup.name}" (${setup.arms.map((a) => a.name).join(', ')})`);
  const links = placed?.robot.links.map((l) => l.name) ?? [];
  if (placed && link && !links.includes(link))
    c.issue(`${q}.link`, link, `must name a link of arm "${arm}" (${links.join(', ')})`);
  return { kind: 'link', arm, link };
}

/** Mount-from-optical: xyz with rpy, or xyz with look_at (optical +z at the target, +x horizontal). */
function readPose(c: Checker, item: Obj, q: string): Transform {
  const xyz = c.triple(item, 'xyz', `${q}.xyz`);
  if (item.look_at === undefined) return fromXyzRpy(xyz, c.triple(item, 'rpy', `${q}.rpy`, [0, 0, 0]));
  if (item.rpy !== undefined) c.issue(`${q}.look_at`, item.look_at, 'must not be given with rpy (choose one)');
  const target = c.triple(item, 'look_at', `${q}.look_at`);
  const pose = lookAt(xyz, target);
  if (!pose) {
    c.issue(`${q}.look_at`, target, 'must differ from xyz');
    return fromXyzRpy(xyz, [0, 0, 0]);
  }
  return pose;
}

/**
 * The pose at `eye` whose optical +z points at `target`, +x horizontal (right) and +y down;
 * looking straight down, +x is −y of the mount (the mount's +x is up in the image). Undefined when eye = target.
 */
export function lookAt(eye: Triple, target: Triple): Transform | undefined {
  const z = normalize([target[0] - eye[0], target[1] - eye[1], target[2] - eye[2]]);
  if (!z) return undefined;
  const x = normalize(cross(z, [0, 0, 1])) ?? normalize(cross(z, [1, 0, 0]))!;
  const y = cross(z, x);
  const t = new Float64Array(12);
  for (let i = 0; i < 3; i++) {
    t[4 * i] = x[i]!;
    t[4 * i + 1] = y[i]!;
    t[4 * i + 2] = z[i]!;
    t[4 * i + 3] = eye[i]!;
  }
  return t;
}

const cross = (a: Triple, b: Triple): Triple => [
  a[1] * b[2] - a[2] * b[1],
  a[2] * b[0] - a[0] * b[2],
  a[0] * b[1] - a[1] * b[0],
];

function normalize(v: Triple): Triple | undefined {
  const n = Math.hypot(v[0], v[1], v[2]);
  return n > 1e-9 && Number.isFinite(n) ? [v[0] / n, v[1] / n, v[2] / n] : undefined;
}
