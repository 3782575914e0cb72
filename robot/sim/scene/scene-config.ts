// Scene files (configs/scenes/<name>.yaml) → SceneDescription: a table, objects, obstacles,
// cameras, named predicates and the tasks they define (the predicates a task requires) for a
// robot or setup of configs/robots/, checked as a whole.
import { readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse as parseYaml } from 'yaml';
import { formatIssue } from '../../common/validation/issue.js';
import { guardJson } from '../../common/validation/json-guard.js';
import { isRecord } from '../../common/validation/values.js';
import { Checker } from '../../description/checker.js';
import { loadArms } from '../../description/loader.js';
import type { SetupDescription, Validated } from '../../description/types.js';
import { checkLayout, restHeights } from './scene-layout.js';
import { readCameras } from './scene-cameras.js';
import { readColor, readObjects, readSceneObstacles } from './scene-objects.js';
import { NAME_PATTERN, parsePredicate } from './predicate-text.js';
import { checkPredicate } from './predicates.js';
import type { NamedPredicate, SceneDescription, SceneTask } from './types.js';

/** configs/scenes/ of this package (from dist/robot/sim/scene/). */
export const SCENES_DIR = fileURLToPath(new URL('../../../../configs/scenes/', import.meta.url));

const KEYS = [
  'name',
  'description',
  'robot',
  'table',
  'objects',
  'obstacles',
  'cameras',
  'predicates',
  'tasks',
  'grasp_tolerance_m',
];
const TABLE_COLOR: [number, number, number] = [160, 130, 100];
export const DEFAULT_GRASP_TOLERANCE_M = 0.005;

/** The arms of a robot or setup by name (a single robot is one arm named `arm`). */
export type ArmsLoader = (robot: string) => Validated<SetupDescription>;

const shippedArms: ArmsLoader = (robot) => {
  const r = loadArms(robot);
  return r.ok ? { ok: true, value: r.value.setup } : r;
};

/** A scene by name (configs/scenes/<name>.yaml) or by file path (containing `/` or ending `.yaml`). */
export function loadScene(
  nameOrPath: string,
  dir: string = SCENES_DIR,
  arms = shippedArms,
): Validated<SceneDescription> {
  const isPath = nameOrPath.includes('/') || nameOrPath.endsWith('.yaml');
  const file = isPath ? nameOrPath : join(dir, `${nameOrPath}.yaml`);
  const name = basename(file).replace(/\.yaml$/, '');
  const c = new Checker(name, 'scene');
  let text: string;
  let raw: unknown;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    c.issue('config file', file, `cannot be read (${(err as NodeJS.ErrnoException).code})`);
    return { ok: false, issues: c.issues };
  }
  try {
    raw = parseYaml(text);
  } catch (err) {
    c.issue('config file', file, `is not valid YAML: ${(err as Error).message}`);
    return { ok: false, issues: c.issues };
  }
  if (isRecord(raw) && raw.name !== name) {
    c.issue('name', raw.name, `must equal the file name "${name}"`);
    return { ok: false, issues: c.issues };
  }
  return parseScene(raw, name, arms);
}

/** Checks parsed YAML; every broken rule is an issue `scene "<name>": <key>: <rule>, got <value>`. */
export function parseScene(raw: unknown, name: string, arms: ArmsLoader = shippedArms): Validated<SceneDescription> {
  const c = new Checker(name, 'scene');
  for (const issue of guardJson(raw)) c.issue(issue.path || 'config', issue.value, issue.rule);
  if (c.issues.length) return { ok: false, issues: c.issues };
  if (!isRecord(raw)) {
    c.issue('config', raw, 'must be a mapping');
    return { ok: false, issues: c.issues };
  }
  c.knownKeys(raw, KEYS, '');
  c.string(raw, 'name', 'name', NAME_PATTERN);
  const robot = c.string(raw, 'robot', 'robot');
  const setup = robot ? loadRobotArms(c, robot, arms) : undefined;
  const description = c.optionalString(raw, 'description', 'description');
  const table = c.section(raw, 'table', '', true) ?? {};
  c.knownKeys(table, ['height_m', 'size_m', 'center_m', 'color'], 'table.');
  const scene: SceneDescription = {
    name,
    description,
    robot,
    table: {
      height: c.number(table, 'height_m', 'table.height_m', {}, 0),
      size: readPair(c, table.size_m, 'table.size_m', true) ?? [NaN, NaN],
      center: readPair(c, table.center_m, 'table.center_m', false) ?? [0, 0],
      color: readColor(c, table, 'color', 'table.color', TABLE_COLOR),
    },
    objects: readObjects(c, raw.objects),
    obstacles: readSceneObstacles(c, raw.obstacles),
    cameras: readCameras(c, raw.cameras, setup),
    predicates: [],
    tasks: [],
    graspTolerance: c.number(raw, 'grasp_tolerance_m', 'grasp_tolerance_m', { min: 0 }, DEFAULT_GRASP_TOLERANCE_M),
  };
  checkNames(c, raw, scene);
  scene.predicates = readPredicates(c, raw.predicates, scene, setup);
  scene.tasks = readTasks(c, raw.tasks, scene.predicates);
  if (c.issues.length === 0) checkLayout(c, scene);
  if (c.issues.length) return { ok: false, issues: c.issues };
  restHeights(scene);
  return { ok: true, value: scene };
}

function loadRobotArms(c: Checker, robot: string, arms: ArmsLoader): SetupDescription | undefined {
  const r = arms(robot);
  if (r.ok) return r.value;
  for (const issue of r.issues)
    c.issues.push({
      path: c.path('robot'),
      rule: 'must name a valid robot or setup config under configs/robots/',
      value: robot,
      hint: formatIssue(issue),
    });
  return undefined;
}

/** A [x, y] pair of finite numbers (m); sizes must be > 0. */
function readPair(c: Checker, v: unknown, q: string, positive: boolean): [number, number] | undefined {
  if (v === undefined && !positive) return undefined;
  const ok = (x: unknown): x is number => typeof x === 'number' && Number.isFinite(x) && (!positive || x > 0);
  if (!Array.isArray(v) || v.length !== 2 || !v.every(ok)) {
    c.issue(q, v, `must be [x, y], two ${positive ? 'numbers > 0' : 'finite numbers'} (m)`);
    return undefined;
  }
  return [v[0], v[1]];
}

/** Objects, obstacles and cameras share one namespace (a predicate or a log line names one thing). */
function checkNames(c: Checker, raw: Record<string, unknown>, scene: SceneDescription): void {
  const seen = new Map<string, string>();
  const lists: [string, { name: string }[]][] = [
    ['objects', scene.objects],
    ['obstacles', scene.obstacles],
    ['cameras', scene.cameras],
  ];
  for (const [key, items] of lists) {
    const rawList = raw[key] as unknown[];
    for (const item of items) {
      if (!item.name) continue;
      const i = rawList.findIndex((r) => isRecord(r) && r.name === item.name);
      const earlier = seen.get(item.name);
      // Obstacles check their own list's uniqueness.
      if (earlier && !(key === 'obstacles' && earlier === 'obstacles'))
        c.issue(
          `${key}[${i}].name`,
          item.name,
          `must be unique among objects, obstacles and cameras (also in ${earlier})`,
        );
      seen.set(item.name, key);
    }
  }
}

function readPredicates(
  c: Checker,
  v: unknown,
  scene: SceneDescription,
  setup: SetupDescription | undefined,
): NamedPredicate[] {
  if (v === undefined) return [];
  if (!isRecord(v)) {
    c.issue(
      'predicates',
      v,
      'must be a mapping of predicate name to predicate text, e.g. {in_bowl: "inside(cube, bowl)"}',
    );
    return [];
  }
  const out: NamedPredicate[] = [];
  for (const [name, text] of Object.entries(v)) {
    const q = `predicates.${name}`;
    if (!NAME_PATTERN.test(name)) c.issue(q, name, `name must match ${NAME_PATTERN}`);
    if (typeof text !== 'string') {
      c.issue(q, text, 'must be predicate text, e.g. "inside(cube, bowl)"');
      continue;
    }
    const p = parsePredicate(text);
    if (!p.ok) {
      c.issue(q, text, p.rule);
      continue;
    }
    const rule = checkPredicate(
      scene,
      p.predicate,
      setup?.arms.map((a) => a.name),
    );
    if (rule) c.issue(q, text, rule);
    out.push({ name, text, predicate: p.predicate });
  }
  return out;
}

/** Tasks: an instruction and the names of the predicates that must all hold for it to be complete. */
function readTasks(c: Checker, v: unknown, predicates: NamedPredicate[]): SceneTask[] {
  if (v === undefined) return [];
  if (!isRecord(v)) {
    c.issue('tasks', v, 'must be a mapping of task name to {instruction, success: [predicate names]}');
    return [];
  }
  const known = predicates.map((p) => p.name);
  const out: SceneTask[] = [];
  for (const [name, task] of Object.entries(v)) {
    const q = `tasks.${name}`;
    if (!NAME_PATTERN.test(name)) c.issue(q, name, `name must match ${NAME_PATTERN}`);
    if (!isRecord(task)) {
      c.issue(q, task, 'must be a mapping {instruction, success: [predicate names]}');
      continue;
    }
    c.knownKeys(task, ['instruction', 'success'], `${q}.`);
    const instruction = c.string(task, 'instruction', `${q}.instruction`);
    const success = task.success;
    if (!Array.isArray(success) || success.length === 0 || !success.every((s) => typeof s === 'string')) {
      c.issue(`${q}.success`, success, 'must be a non-empty list of predicate names (keys of predicates)');
      continue;
    }
    for (const s of success)
      if (!known.includes(s))
        c.issue(`${q}.success`, s, `names no predicate of the scene (${known.join(', ') || 'none'})`);
    if (new Set(success).size !== success.length) c.issue(`${q}.success`, success, 'must not name a predicate twice');
    out.push({ name, instruction, success });
  }
  return out;
}
