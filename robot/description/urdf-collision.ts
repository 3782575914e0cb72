// Link capsules from URDF <collision> elements: each box, cylinder or sphere bounded by one
// capsule in its link's frame (a cylinder by the capsule over its axis, a box by the capsule over
// its longest axis with the half-diagonal of the other two as radius). Meshes have no size here.
import { fromXyzRpy, transformPoint } from '../math/transform.js';
import { vec3 } from '../math/vec3.js';
import type { CapsuleSpec, Triple } from './types.js';
import { parseXml, type XmlElement } from './xml.js';

export type CollisionResult = { ok: true; capsules: CapsuleSpec[] } | { ok: false; errors: string[] };

/** Capsules bounding the collision shapes of the named links; a mesh or a bad number is an error. */
export function urdfCollisionCapsules(xml: string, links: ReadonlySet<string>): CollisionResult {
  const doc = parseXml(xml);
  if (!doc.ok) return { ok: false, errors: [doc.error] };
  const capsules: CapsuleSpec[] = [];
  const errors: string[] = [];
  for (const link of doc.root.children) {
    const name = link.attributes.name;
    if (link.name !== 'link' || !links.has(name)) continue;
    for (const col of link.children.filter((c) => c.name === 'collision')) {
      const where = `link "${name}" <collision> (line ${col.line})`;
      const r = boundingCapsule(col);
      if (typeof r === 'string') errors.push(`${where}: ${r}`);
      else capsules.push({ link: name, ...r });
    }
  }
  return errors.length ? { ok: false, errors } : { ok: true, capsules };
}

function numbers(text: string | undefined, count: number): number[] | undefined {
  const parts = (text ?? '').trim().split(/\s+/).map(Number);
  return parts.length === count && parts.every((x) => Number.isFinite(x) && x >= 0) ? parts : undefined;
}

/** The capsule around one <collision>, or why there is none. */
function boundingCapsule(col: XmlElement): { radius: number; a: Triple; b: Triple } | string {
  const child = (el: XmlElement, n: string): XmlElement | undefined => el.children.find((c) => c.name === n);
  const origin = child(col, 'origin');
  const xyz = origin?.attributes.xyz?.trim().split(/\s+/).map(Number) ?? [0, 0, 0];
  const rpy = origin?.attributes.rpy?.trim().split(/\s+/).map(Number) ?? [0, 0, 0];
  if (xyz.length !== 3 || rpy.length !== 3 || ![...xyz, ...rpy].every(Number.isFinite))
    return 'origin xyz/rpy must be three finite numbers';
  const shape = child(col, 'geometry')?.children[0];
  let half: Triple, radius: number;
  if (shape?.name === 'sphere') {
    const r = numbers(shape.attributes.radius, 1);
    if (!r) return 'sphere radius must be a number ≥ 0';
    [half, radius] = [[0, 0, 0], r[0]];
  } else if (shape?.name === 'cylinder') {
    const r = numbers(shape.attributes.radius, 1),
      l = numbers(shape.attributes.length, 1);
    if (!r || !l) return 'cylinder radius and length must be numbers ≥ 0';
    [half, radius] = [[0, 0, l[0] / 2], r[0]];
  } else if (shape?.name === 'box') {
    const s = numbers(shape.attributes.size, 3);
    if (!s) return 'box size must be three numbers ≥ 0';
    const i = s.indexOf(Math.max(...s));
    const rest = s.filter((_, k) => k !== i);
    half = [0, 0, 0];
    half[i] = s[i] / 2;
    radius = Math.hypot(rest[0] / 2, rest[1] / 2);
  } else
    return `geometry ${shape ? `<${shape.name}>` : 'missing'}: only box, cylinder and sphere can be bounded (declare capsules for this link)`;
  if (!(radius > 0)) return 'the bounding capsule has zero radius';
  const T = fromXyzRpy(xyz, rpy);
  const p = vec3();
  const at = (s: number): Triple => {
    transformPoint(p, T, [s * half[0], s * half[1], s * half[2]]);
    return [p[0], p[1], p[2]];
  };
  return { radius, a: at(-1), b: at(1) };
}
