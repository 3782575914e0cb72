// URDF import: the serial chain from a base link to a tip link (revolute, continuous, prismatic
// and fixed joints; origin xyz/rpy; axis; limit lower/upper/velocity). Fixed joints are folded
// into the neighbouring transforms; links hanging off the chain by fixed joints are kept as
// offsets so capsules can name them. Pure: XML text in, chain out.
import { compose, fromXyzRpy, identity, type Transform } from '../math/transform.js';
import type { JointType, KinematicChainSpec, KinematicJoint, LinkFrame, Triple } from './types.js';
import { parseXml, type XmlElement } from './xml.js';

export interface UrdfLimits {
  lower?: number;
  upper?: number;
  velocity?: number;
}

export interface UrdfChain extends KinematicChainSpec {
  robotName: string;
  /** Limits as written in the URDF, by joint name. */
  limits: Map<string, UrdfLimits>;
}

export type UrdfResult = { ok: true; chain: UrdfChain } | { ok: false; errors: string[] };

interface RawJoint {
  name: string;
  type: string;
  parent: string;
  child: string;
  origin: Transform;
  axis: Triple;
  limits: UrdfLimits;
  line: number;
}

const SUPPORTED = new Set(['revolute', 'continuous', 'prismatic', 'fixed']);

function numbers(text: string | undefined, count: number, fallback: number[]): number[] | undefined {
  if (text === undefined) return fallback;
  const parts = text.trim().split(/\s+/).map(Number);
  return parts.length === count && parts.every(Number.isFinite) ? parts : undefined;
}

function readJoint(el: XmlElement, errors: string[]): RawJoint | undefined {
  const where = `joint "${el.attributes.name ?? '?'}" (line ${el.line})`;
  const child = (n: string): XmlElement | undefined => el.children.find((c) => c.name === n);
  const name = el.attributes.name;
  const type = el.attributes.type;
  const parent = child('parent')?.attributes.link;
  const childLink = child('child')?.attributes.link;
  if (!name || !type || !parent || !childLink) {
    errors.push(`${where}: needs name, type, <parent link> and <child link>`);
    return undefined;
  }
  const origin = child('origin');
  const xyz = numbers(origin?.attributes.xyz, 3, [0, 0, 0]);
  const rpy = numbers(origin?.attributes.rpy, 3, [0, 0, 0]);
  // URDF's default axis is x.
  const axis = numbers(child('axis')?.attributes.xyz, 3, [1, 0, 0]);
  if (!xyz || !rpy || !axis) {
    errors.push(`${where}: origin xyz/rpy and axis xyz must be three finite numbers`);
    return undefined;
  }
  const limitEl = child('limit');
  const limits: UrdfLimits = {};
  for (const key of ['lower', 'upper', 'velocity'] as const) {
    const v = limitEl?.attributes[key];
    if (v === undefined) continue;
    const n = Number(v);
    if (!Number.isFinite(n)) {
      errors.push(`${where}: limit ${key} = "${v}" is not a finite number`);
      return undefined;
    }
    limits[key] = n;
  }
  return {
    name,
    type,
    parent,
    child: childLink,
    origin: fromXyzRpy(xyz, rpy),
    axis: axis as Triple,
    limits,
    line: el.line,
  };
}

export function importUrdf(xml: string, options: { baseLink?: string; tipLink?: string } = {}): UrdfResult {
  const parsed = parseXml(xml);
  if (!parsed.ok) return { ok: false, errors: [parsed.error] };
  const root = parsed.root;
  if (root.name !== 'robot') return { ok: false, errors: [`URDF: root element is <${root.name}>, expected <robot>`] };
  const errors: string[] = [];
  const linkNames = new Set(root.children.filter((c) => c.name === 'link').map((c) => c.attributes.name ?? ''));
  const joints: RawJoint[] = [];
  for (const el of root.children) {
    if (el.name !== 'joint') continue;
    const j = readJoint(el, errors);
    if (j) joints.push(j);
  }
  const byChild = new Map<string, RawJoint>();
  for (const j of joints) {
    for (const l of [j.parent, j.child])
      if (!linkNames.has(l)) errors.push(`joint "${j.name}" (line ${j.line}): link "${l}" is not defined`);
    if (byChild.has(j.child))
      errors.push(`link "${j.child}" has two parent joints ("${byChild.get(j.child)!.name}", "${j.name}")`);
    byChild.set(j.child, j);
  }
  if (errors.length) return { ok: false, errors };

  const roots = [...linkNames].filter((l) => !byChild.has(l));
  const baseLink = options.baseLink ?? (roots.length === 1 ? roots[0] : undefined);
  if (!baseLink)
    return { ok: false, errors: [`URDF has ${roots.length} root links (${roots.join(', ')}): name base_link`] };
  if (!linkNames.has(baseLink)) return { ok: false, errors: [`base_link "${baseLink}" is not a link of the URDF`] };
  const parents = new Set(joints.map((j) => j.parent));
  let tipLink = options.tipLink;
  if (!tipLink) {
    const leaves = [...linkNames].filter((l) => !parents.has(l) && isBelow(l, baseLink, byChild));
    if (leaves.length !== 1)
      return {
        ok: false,
        errors: [`URDF has ${leaves.length} tip links below "${baseLink}" (${leaves.join(', ')}): name tip_link`],
      };
    tipLink = leaves[0];
  }
  if (!linkNames.has(tipLink)) return { ok: false, errors: [`tip_link "${tipLink}" is not a link of the URDF`] };
  if (!isBelow(tipLink, baseLink, byChild))
    return { ok: false, errors: [`tip_link "${tipLink}" is not below base_link "${baseLink}"`] };

  // Path base → tip.
  const path: RawJoint[] = [];
  for (let l = tipLink; l !== baseLink; l = byChild.get(l)!.parent) path.unshift(byChild.get(l)!);

  const chainJoints: KinematicJoint[] = [];
  const links: LinkFrame[] = [{ name: baseLink, frame: 0, offset: identity() }];
  const limits = new Map<string, UrdfLimits>();
  let pending = identity();
  for (const j of path) {
    if (!SUPPORTED.has(j.type))
      return {
        ok: false,
        errors: [
          `joint "${j.name}" (line ${j.line}): type "${j.type}" is not supported (revolute, continuous, prismatic, fixed)`,
        ],
      };
    if (j.type === 'fixed') {
      pending = compose(new Float64Array(12), pending, j.origin);
      links.push({ name: j.child, frame: chainJoints.length, offset: pending });
      continue;
    }
    const n = Math.hypot(j.axis[0], j.axis[1], j.axis[2]);
    if (!(n > 1e-9)) return { ok: false, errors: [`joint "${j.name}" (line ${j.line}): axis is zero`] };
    chainJoints.push({
      name: j.name,
      type: j.type as JointType,
      parent: j.parent,
      child: j.child,
      origin: compose(new Float64Array(12), pending, j.origin),
      axis: [j.axis[0] / n, j.axis[1] / n, j.axis[2] / n],
    });
    limits.set(j.name, j.limits);
    links.push({ name: j.child, frame: chainJoints.length, offset: identity() });
    pending = identity();
  }
  // Links hanging off the chain by fixed joints (a camera, a gripper body beside the tip).
  const known = new Map(links.map((l) => [l.name, l]));
  for (let added = true; added; ) {
    added = false;
    for (const j of joints) {
      const p = known.get(j.parent);
      if (j.type !== 'fixed' || !p || known.has(j.child)) continue;
      const l = { name: j.child, frame: p.frame, offset: compose(new Float64Array(12), p.offset, j.origin) };
      links.push(l);
      known.set(l.name, l);
      added = true;
    }
  }
  return {
    ok: true,
    chain: { robotName: root.attributes.name ?? '', baseLink, joints: chainJoints, links, flange: pending, limits },
  };
}

function isBelow(link: string, ancestor: string, byChild: Map<string, RawJoint>): boolean {
  const seen = new Set<string>();
  for (let l: string | undefined = link; l !== undefined; l = byChild.get(l)?.parent) {
    if (l === ancestor) return true;
    if (seen.has(l)) return false;
    seen.add(l);
  }
  return false;
}
