// Success predicates evaluated on object states: pure geometry over the scene's shapes and the
// current poses (docs/scenes.md states each definition). A predicate about a missing object is false.
import { CONTACT_EPS, bottomZ, footprintContains, topZ } from './geometry.js';
import { isContainer } from './scene-layout.js';
import type { NamedPredicate, ObjectState, Predicate, SceneDescription, SceneObject } from './types.js';

/** How far (m) an object's bottom may be from the top of what it stands on for `on_top`. */
export const ON_TOP_TOLERANCE_M = 0.005;

type Placed = { object: SceneObject; state: ObjectState };

function find(scene: SceneDescription, states: readonly ObjectState[], name: string): Placed | undefined {
  const object = scene.objects.find((o) => o.name === name);
  const state = states.find((s) => s.name === name);
  return object && state ? { object, state } : undefined;
}

const bottom = (p: Placed): number => bottomZ(p.object.shape, p.state.pose);
const top = (p: Placed): number => topZ(p.object.shape, p.state.pose);
const over = (a: Placed, b: Placed): boolean =>
  footprintContains(b.object.shape, b.state.pose, a.state.pose[3]!, a.state.pose[7]!);

export function evaluatePredicate(scene: SceneDescription, states: readonly ObjectState[], p: Predicate): boolean {
  const a = find(scene, states, p.object);
  if (!a) return false;
  const pose = a.state.pose;
  switch (p.kind) {
    case 'inside': {
      const c = find(scene, states, p.container);
      return !!c && over(a, c) && bottom(a) >= bottom(c) - CONTACT_EPS && bottom(a) <= top(c);
    }
    case 'on_top': {
      const b = find(scene, states, p.below);
      return !!b && Math.abs(bottom(a) - top(b)) <= ON_TOP_TOLERANCE_M && over(a, b);
    }
    case 'near':
      return Math.hypot(pose[3]! - p.xyz[0], pose[7]! - p.xyz[1], pose[11]! - p.xyz[2]) <= p.tolerance;
    case 'lifted':
      return bottom(a) >= a.object.restZ + p.height;
    case 'held_by':
      return a.state.heldBy === p.arm;
  }
}

/** Every named predicate's value, by name. */
export function evaluateAll(
  scene: SceneDescription,
  states: readonly ObjectState[],
  predicates: readonly NamedPredicate[] = scene.predicates,
): Record<string, boolean> {
  const out: Record<string, boolean> = {};
  for (const p of predicates) out[p.name] = evaluatePredicate(scene, states, p.predicate);
  return out;
}

/** The rule a predicate breaks against the scene's objects and the robot's arms (when known), or undefined. */
export function checkPredicate(
  scene: SceneDescription,
  p: Predicate,
  arms: readonly string[] | undefined,
): string | undefined {
  const names = scene.objects.map((o) => o.name);
  const missing = (n: string): string =>
    `names "${n}", which is not an object of the scene (${names.join(', ') || 'none'})`;
  if (!names.includes(p.object)) return missing(p.object);
  if (p.kind === 'inside' || p.kind === 'on_top') {
    const other = p.kind === 'inside' ? p.container : p.below;
    const object = scene.objects.find((o) => o.name === other);
    if (!object) return missing(other);
    if (other === p.object) return `relates "${other}" to itself`;
    if (p.kind === 'inside' && !isContainer(object)) return `needs "${other}" to be a container (tags: [container])`;
  }
  if (p.kind === 'held_by' && arms && !arms.includes(p.arm))
    return `names arm "${p.arm}", which is not an arm of robot "${scene.robot}" (${arms.join(', ')})`;
  return undefined;
}
