import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { formatIssue } from '../../../robot/common/validation/issue.js';
import { listConfigs } from '../../../robot/description/loader.js';
import { SCENES_DIR, loadScene, parseScene } from '../../../robot/sim/scene/scene-config.js';
import type { SceneDescription } from '../../../robot/sim/scene/types.js';
import { block, bowl, validScene } from './scene-fixtures.js';

const base = { objects: [block('cube', [0.3, 0, 0.02]), bowl] };
const ok = (raw: object): SceneDescription => validScene({ ...base, ...raw });

/** The formatted issues of a scene that must fail. */
function issues(raw: object, name = 'cell'): string[] {
  const r = parseScene({ name, robot: 'yam', table: { size_m: [1, 1] }, ...base, ...raw }, name);
  assert.ok(!r.ok, 'expected the scene to be refused');
  return r.issues.map((i) => formatIssue(i));
}

test('every shipped scene loads and validates', () => {
  const names = listConfigs(SCENES_DIR);
  assert.deepEqual(names, ['dual-yam-handover', 'ur5e-stack', 'yam-pick-place']);
  for (const name of names) {
    const r = loadScene(name);
    assert.ok(r.ok, r.ok ? '' : r.issues.map((i) => formatIssue(i)).join('\n'));
    assert.equal(r.value.name, name);
    assert.ok(
      r.value.objects.length > 0 &&
        r.value.cameras.length > 0 &&
        r.value.predicates.length > 0 &&
        r.value.tasks.length > 0,
    );
  }
});

test('dual-yam-handover and ur5e-stack: arms of the setup, link mounts, stacking predicates', () => {
  const dual = loadScene('dual-yam-handover');
  assert.ok(dual.ok);
  assert.deepEqual(
    dual.value.cameras.map((c) => c.mount),
    [{ kind: 'world' }, { kind: 'link', arm: 'left', link: 'link_6' }, { kind: 'link', arm: 'right', link: 'link_6' }],
  );
  assert.deepEqual(dual.value.predicates[1].predicate, { kind: 'held_by', object: 'block', arm: 'right' });
  const stack = loadScene('ur5e-stack');
  assert.ok(stack.ok);
  assert.deepEqual(
    stack.value.predicates.map((p) => p.text),
    ['on_top(green_block, red_block)', 'on_top(blue_block, green_block)', 'lifted(blue_block, 0.099)'],
  );
  assert.deepEqual(stack.value.obstacles[0].color, [25, 25, 25]);
});

test('yam-pick-place: colours, a container, a world camera from fov and a wrist camera on link_6', () => {
  const r = loadScene('yam-pick-place');
  assert.ok(r.ok);
  const s = r.value;
  const red = s.objects.find((o) => o.name === 'red_block')!;
  assert.deepEqual(
    [red.color, red.shape, red.restZ, red.noise],
    [[220, 40, 40], { kind: 'box', size: [0.04, 0.04, 0.04] }, 0, { xy: 0.01, yaw: 0.3 }],
  );
  assert.deepEqual(s.objects.find((o) => o.name === 'bowl')!.tags, ['container']);
  const [front, wrist] = s.cameras;
  // fov 60° over 640 px: fx = 320 / tan(30°).
  assert.ok(Math.abs(front.fx - 320 / Math.tan(Math.PI / 6)) < 1e-9);
  assert.deepEqual([front.cx, front.cy, front.mount], [320, 240, { kind: 'world' }]);
  assert.deepEqual(wrist.mount, { kind: 'link', arm: 'arm', link: 'link_6' });
  assert.deepEqual(s.predicates[0], {
    name: 'red_in_bowl',
    text: 'inside(red_block, bowl)',
    predicate: { kind: 'inside', object: 'red_block', container: 'bowl' },
  });
});

test('defaults: table at z = 0, grey objects, no noise, 10 Hz JPEG cameras without depth', () => {
  const s = ok({ cameras: [{ name: 'top', resolution: [64, 48], fov_deg: 90, xyz: [0.3, 0, 1] }] });
  assert.deepEqual([s.table.height, s.table.center, s.graspTolerance, s.description], [0, [0, 0], 0.005, '']);
  assert.deepEqual(
    [s.objects[0].color, s.objects[0].tags, s.objects[0].noise],
    [[128, 128, 128], [], { xy: 0, yaw: 0 }],
  );
  const cam = s.cameras[0];
  assert.deepEqual(
    [cam.rate, cam.encoding, cam.depth, cam.mount, Math.round(cam.fx * 1e9) / 1e9, cam.cx, cam.cy],
    [10, 'jpeg', false, { kind: 'world' }, 32, 32, 24],
  );
});

const head = (name: string): string => `name: ${name}\nrobot: yam\ntable: { size_m: [1, 1] }\n`;

test('loadScene: by path, a missing file, a name that is not the file name, reserved keys, bad YAML', () => {
  const dir = mkdtempSync(join(tmpdir(), 'scenes-'));
  try {
    const file = join(dir, 'mine.yaml');
    writeFileSync(file, head('mine'));
    const r = loadScene(file);
    assert.ok(r.ok && r.value.name === 'mine');
    writeFileSync(join(dir, 'other.yaml'), head('mine'));
    const other = loadScene('other', dir);
    assert.ok(!other.ok);
    assert.deepEqual(
      other.issues.map((i) => formatIssue(i)),
      ['scene "other": name: must equal the file name "other", got "mine"'],
    );
    const missing = loadScene('nope', dir);
    assert.ok(!missing.ok);
    assert.match(
      formatIssue(missing.issues[0]),
      /^scene "nope": config file: cannot be read \(ENOENT\), got ".*nope\.yaml"$/,
    );
    writeFileSync(
      join(dir, 'proto.yaml'),
      `${head('proto')}__proto__: { x: 1 }\npredicates: { constructor: "near(a, [0, 0, 0], 1)" }\n`,
    );
    const proto = loadScene('proto', dir);
    assert.ok(!proto.ok);
    assert.deepEqual(
      proto.issues.map((i) => formatIssue(i)),
      [
        'scene "proto": __proto__: is a reserved key (__proto__, constructor and prototype are refused), got "__proto__"',
        'scene "proto": predicates.constructor: is a reserved key (__proto__, constructor and prototype are refused), got "constructor"',
      ],
    );
    writeFileSync(join(dir, 'bad.yaml'), 'name: [\n');
    const bad = loadScene('bad', dir);
    assert.ok(!bad.ok);
    assert.match(formatIssue(bad.issues[0]), /^scene "bad": config file: is not valid YAML: /);
  } finally {
    rmSync(dir, { recursive: true });
  }
});

test('table, objects and top-level keys: each broken rule names the key, the rule and the value', () => {
  assert.deepEqual(issues({ tabel: {}, table: { size_m: [1, 0], color: 'pink', height: 1 }, grasp_tolerance_m: -1 }), [
    'scene "cell": tabel: is not a known key (did you mean "table"?), got {}',
    'scene "cell": table.height: is not a known key (did you mean "height_m"?), got 1',
    'scene "cell": table.size_m: must be [x, y], two numbers > 0 (m), got [1,0]',
    'scene "cell": table.color: must be "#rrggbb" or one of red, green, blue, yellow, orange, purple, white, black, grey, got "pink"',
    'scene "cell": grasp_tolerance_m: must be ≥ 0, got -1',
  ]);
  const bad = block('Cube', [0.3, 0, 0.02], {
    mass_kg: 0,
    color: '#12345',
    colour: 'red',
    tags: 'x',
    noise: { xy_m: -1, yaw: 1 },
    size_m: [0.04, 0, 0.04],
  });
  const rod = { name: 'rod', shape: 'cylinder', radius_m: 0.02, mass_kg: 1, xyz: [0, 0, 0] };
  assert.deepEqual(issues({ objects: [block('cube', [0.3, 0, 0.02], { shape: 'cone' }), bad, rod, 'ball'] }), [
    'scene "cell": objects[0].shape: must be one of box, cylinder, sphere, got "cone"',
    'scene "cell": objects[1].name: must match /^[a-z0-9][a-z0-9_-]*$/, got "Cube"',
    'scene "cell": objects[1].colour: is not a known key (did you mean "color"?), got "red"',
    'scene "cell": objects[1].size_m: must be > 0 on every axis, got [0.04,0,0.04]',
    'scene "cell": objects[1].noise.yaw: is not a known key (known: xy_m, yaw_rad), got 1',
    'scene "cell": objects[1].mass_kg: must be > 0, got 0',
    'scene "cell": objects[1].color: must be "#rrggbb" or one of red, green, blue, yellow, orange, purple, white, black, grey, got "#12345"',
    'scene "cell": objects[1].tags: must be a list of words matching /^[a-z0-9][a-z0-9_-]*$/, got "x"',
    'scene "cell": objects[1].noise.xy_m: must be ≥ 0, got -1',
    'scene "cell": objects[2].height_m: must be a finite number, got nothing',
    'scene "cell": objects[3]: must be a mapping, got "ball"',
  ]);
});

test('robot, reserved keys and names shared by objects, obstacles and cameras', () => {
  assert.deepEqual(
    issues({ robot: 'nope' }).map((i) => i.replace(/\(robot .*\), got/, '(…), got')),
    ['scene "cell": robot: must name a valid robot or setup config under configs/robots/ (…), got "nope"'],
  );
  assert.deepEqual(issues({ predicates: JSON.parse('{"__proto__": "x"}') }), [
    'scene "cell": predicates.__proto__: is a reserved key (__proto__, constructor and prototype are refused), got "__proto__"',
  ]);
  assert.deepEqual(issues(JSON.parse('{"objects": [{"constructor": 1}]}')), [
    'scene "cell": objects[0].constructor: is a reserved key (__proto__, constructor and prototype are refused), got "constructor"',
  ]);
  assert.deepEqual(
    issues({
      obstacles: [
        { name: 'cube', shape: 'sphere', xyz: [1, 1, 1], radius_m: 0.1, color: 7 },
        { name: 'post', shape: 'capsule', a: [1, 0, 0], b: [1, 0, 1], radius_m: 0.1, colour: 'red' },
      ],
      cameras: [{ name: 'post', resolution: [8, 8], fov_deg: 90, xyz: [0, 0, 1] }],
    }),
    [
      'scene "cell": obstacles[1].colour: is not a known key (did you mean "color"?), got "red"',
      'scene "cell": obstacles[0].color: must be "#rrggbb" or one of red, green, blue, yellow, orange, purple, white, black, grey, got 7',
      'scene "cell": obstacles[0].name: must be unique among objects, obstacles and cameras (also in objects), got "cube"',
      'scene "cell": cameras[0].name: must be unique among objects, obstacles and cameras (also in obstacles), got "post"',
    ],
  );
});

test('cameras: resolution, intrinsics, pose, mount, rate, encoding and depth rules', () => {
  const cam = (extra: object) => ({ name: 'c', resolution: [64, 48], fov_deg: 60, xyz: [0, 0, 1], ...extra });
  assert.deepEqual(
    issues({
      cameras: [
        cam({ name: 'c0', resolution: [640, 0], fx: 3, rpy: [0, 0, 0], look_at: [0, 0, 1] }),
        cam({ name: 'c1', mount: { arm: 'left', link: 'hand' }, encoding: 'gif', depth: 'yes', rate_hz: -1 }),
        cam({ name: 'c2', mount: { link: 'hand' }, fov_deg: 180 }),
        cam({ name: 'c3', fov_deg: undefined, fx: 1, fy: 1, cx: 1, mount: 'wrist' }),
      ],
    }),
    [
      'scene "cell": cameras[0].resolution: must be [width, height], integers in 1..4096, got [640,0]',
      'scene "cell": cameras[0]: must give either fov_deg or all of fx, fy, cx, cy, got ["fx","fov_deg"]',
      'scene "cell": cameras[0].look_at: must not be given with rpy (choose one), got [0,0,1]',
      'scene "cell": cameras[0].look_at: must differ from xyz, got [0,0,1]',
      'scene "cell": cameras[1].mount.arm: must name an arm of robot "yam" (arm), got "left"',
      'scene "cell": cameras[1].rate_hz: must be ≥ 0, got -1',
      'scene "cell": cameras[1].encoding: must be one of jpeg, png, got "gif"',
      'scene "cell": cameras[1].depth: must be true or false, got "yes"',
      'scene "cell": cameras[2].fov_deg: must be < 180, got 180',
      'scene "cell": cameras[2].mount.link: must name a link of arm "arm" (base_link, link_1, link_2, link_3, link_4, link_5, link_6, gripper), got "hand"',
      'scene "cell": cameras[3]: must give either fov_deg or all of fx, fy, cx, cy, got ["fx","fy","cx"]',
      'scene "cell": cameras[3].mount: must be "world" or {arm, link}, got "wrist"',
    ],
  );
});

test('predicates: parse errors say what was expected; references are checked', () => {
  assert.deepEqual(
    issues({
      predicates: {
        a: 'inside(cube, cube)',
        b: 'inside(bowl, cube)',
        c: 'on_top(cube, table)',
        d: 'held_by(cube, left)',
        e: 'insde(cube, bowl)',
        f: 'near(cube, [1, 2], 0.1)',
        g: 'lifted(cube)',
        h: 'lifted(cube, -1)',
        i: 42,
        j: 'cube in bowl',
        ok: 'near(cube, [0.3, 0, 0.02], 0.01)',
      },
    }),
    [
      'scene "cell": predicates.a: relates "cube" to itself, got "inside(cube, cube)"',
      'scene "cell": predicates.b: needs "cube" to be a container (tags: [container]), got "inside(bowl, cube)"',
      'scene "cell": predicates.c: names "table", which is not an object of the scene (cube, bowl), got "on_top(cube, table)"',
      'scene "cell": predicates.d: names arm "left", which is not an arm of robot "yam" (arm), got "held_by(cube, left)"',
      'scene "cell": predicates.e: names no predicate (did you mean "inside"?); expected one of inside(object, container), on_top(object, below), near(object, [x, y, z], tol_m), lifted(object, h_m), held_by(object, arm), got "insde(cube, bowl)"',
      'scene "cell": predicates.f: argument 2 ([x, y, z]) of near(object, [x, y, z], tol_m) must be a point [x, y, z] of three finite numbers (m), got "near(cube, [1, 2], 0.1)"',
      'scene "cell": predicates.g: lifted takes 2 arguments: lifted(object, h_m), got "lifted(cube)"',
      'scene "cell": predicates.h: argument 2 (h_m) of lifted(object, h_m) must be a number > 0 (m), got "lifted(cube, -1)"',
      'scene "cell": predicates.i: must be predicate text, e.g. "inside(cube, bowl)", got 42',
      'scene "cell": predicates.j: must be a predicate call, one of inside(object, container), on_top(object, below), near(object, [x, y, z], tol_m), lifted(object, h_m), held_by(object, arm), got "cube in bowl"',
    ],
  );
});

test('tasks: each names the predicates it requires; the others are reported, not required', () => {
  const r = loadScene('yam-pick-place');
  assert.ok(r.ok);
  assert.deepEqual(r.value.tasks, [
    { name: 'block_in_bowl', instruction: 'Put the red block in the bowl.', success: ['red_in_bowl'] },
    {
      name: 'lift_red',
      instruction: 'Pick up the red block and hold it above the table.',
      success: ['red_held', 'red_lifted'],
    },
  ]);
  const s = ok({
    predicates: { in: 'inside(cube, bowl)', up: 'lifted(cube, 0.05)' },
    tasks: { put: { instruction: 'put the cube in the bowl', success: ['in'] } },
  });
  assert.deepEqual(
    [s.predicates.map((p) => p.name), s.tasks],
    [['in', 'up'], [{ name: 'put', instruction: 'put the cube in the bowl', success: ['in'] }]],
  );
});

test('tasks: unknown predicates, empty or repeated lists, missing instructions and unknown keys are refused', () => {
  assert.deepEqual(
    issues({
      predicates: { in: 'inside(cube, bowl)' },
      tasks: {
        a: { instruction: 'x', success: ['in', 'out'] },
        b: { instruction: 'x', success: [] },
        c: { success: ['in'] },
        d: { instruction: 'x', success: ['in', 'in'], sucess: 1 },
        e: 'in',
        F: { instruction: 'x', success: ['in'] },
      },
    }),
    [
      'scene "cell": tasks.a.success: names no predicate of the scene (in), got "out"',
      'scene "cell": tasks.b.success: must be a non-empty list of predicate names (keys of predicates), got []',
      'scene "cell": tasks.c.instruction: must be a non-empty string, got nothing',
      'scene "cell": tasks.d.sucess: is not a known key (did you mean "success"?), got 1',
      'scene "cell": tasks.d.success: must not name a predicate twice, got ["in","in"]',
      'scene "cell": tasks.e: must be a mapping {instruction, success: [predicate names]}, got "in"',
      'scene "cell": tasks.F: name must match /^[a-z0-9][a-z0-9_-]*$/, got "F"',
    ],
  );
  // `success` was the old mapping of predicates: it is refused, not read.
  assert.match(issues({ success: { in: 'inside(cube, bowl)' } })[0]!, /^scene "cell": success: is not a known key/);
});

test('layout: objects below the table or overlapping an object or obstacle are refused, naming the pair', () => {
  const objects = [
    block('a', [0.3, 0, 0.02]),
    block('b', [0.33, 0.01, 0.02]),
    block('c', [0.5, 0, 0.01]),
    bowl,
    block('in_bowl', [0.3, -0.2, 0.02]),
    block('stacked', [0.3, 0, 0.06]),
  ];
  const wall = { name: 'wall', shape: 'box', xyz: [0.5, 0, 0.1], size: [0.02, 0.5, 0.2], color: 'black' };
  assert.deepEqual(issues({ objects, obstacles: [wall] }), [
    'scene "cell": objects[1].xyz: must not overlap object "a" (objects[0]), got [0.33,0.01,0.02]',
    'scene "cell": objects[2].xyz: must keep the object\'s bottom (z = -0.01) at or above the table (z = 0), got [0.5,0,0.01]',
    'scene "cell": objects[2].xyz: must not overlap obstacle "wall" (obstacles[0]), got [0.5,0,0.01]',
  ]);
});

test('rest heights: objects drop onto the table, an object below, or a container bottom', () => {
  const s = ok({
    table: { size_m: [1, 1], height_m: 0.1 },
    objects: [
      block('low', [0.3, 0, 0.12]),
      block('floating', [0.3, 0.005, 0.3]),
      { ...bowl, xyz: [0.3, -0.2, 0.125] },
      block('dropped_in', [0.3, -0.2, 0.4]),
      block('aside', [0.6, 0, 0.5]),
    ],
  });
  assert.deepEqual(
    s.objects.map((o) => [o.name, Math.round(o.restZ * 1e9) / 1e9]),
    [
      ['low', 0.1],
      ['floating', 0.14],
      ['bowl', 0.1],
      ['dropped_in', 0.1],
      ['aside', 0.1],
    ],
  );
});
