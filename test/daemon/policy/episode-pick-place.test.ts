// A scripted episode completes yam-pick-place (the red block into the bowl) on a simulated
// workcell, judged by the real scene check: the simulator's own sim/scene predicates. The script's
// poses come from the same seeded SimWorld the `brainstem sim --scene ... --seed 5` child builds.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadArms } from '../../../robot/description/loader.js';
import { loadScene } from '../../../robot/sim/scene/scene-config.js';
import { SimWorld } from '../../../robot/sim/scene/world.js';
import { waitFor } from '../../helpers/wait.js';
import { episodeEvents, episodeFinished, startRig, waitReady, type Rig } from '../robots/harness.js';

const SEED = 5;
const call = (name: string, args: object) => JSON.stringify({ name, arguments: args });

/** Where the seeded start puts an object: its world x, y. */
function objectXY(name: string): [number, number] {
  const scene = loadScene('yam-pick-place');
  const arms = loadArms('yam');
  assert.ok(scene.ok && arms.ok);
  const o = new SimWorld(scene.value, arms.value.setup, SEED).truth().objects.find((x) => x.name === name);
  assert.ok(o, name);
  return [o.pose[0]!, o.pose[1]!];
}

// The TCP pointing down (a half turn about y), the fingers closing along world y (as sim-scene.test.ts).
const moveTo = (x: number, y: number, z: number) =>
  call('move_to', { target: { pose_xyzquat: [x, y, z, 0, 1, 0, 0] } });

/** Over the red block, down, grasp, lift: the block held above the table. */
function pickLines(): string[] {
  const [x, y] = objectXY('red_block');
  return [moveTo(x, y, 0.15), moveTo(x, y, 0.035), call('set_gripper', { gripper: 0 }), moveTo(x, y, 0.15)];
}

/** Over the bowl, open: the block drops into it. */
function placeLines(): string[] {
  const [x, y] = objectXY('bowl');
  return [moveTo(x, y, 0.15), call('set_gripper', { gripper: 1 })];
}

// The scene's task block_in_bowl requires red_in_bowl; red_lifted and red_held are only reported.
const CHECK = { kind: 'scene', task: 'block_in_bowl' };

async function rig(t: Parameters<typeof startRig>[0]): Promise<Rig> {
  const r = (await startRig(t, 'embedded', {
    robots: [{ id: 'arm1', robot: 'yam' }],
    simExtra: { arm1: ['--scene', 'yam-pick-place', '--seed', String(SEED)] },
  }))!;
  await waitReady(r, 'arm1');
  // policy.start refuses a scene check until the robot's first sim/scene has arrived.
  await waitFor(
    async () => (await r.rpc.call('sim.scene', { robot: 'arm1' })).result.scene ?? undefined,
    'a sim.scene',
  );
  // The first renders can pause the simulator on a loaded machine: start once both cameras have
  // sent a frame and the robot is ready again (as policy eval does).
  const cameras = r.d.robots.robot('arm1')!.cameras;
  await waitFor(() => (['front', 'wrist'].every((c) => cameras.frame(c, 'color')) ? true : undefined), 'camera frames');
  await waitReady(r, 'arm1');
  return r;
}

async function run(r: Rig, lines: string[]): Promise<{ end: any; events: any[] }> {
  const s = await r.rpc.call('policy.start', {
    robot: 'arm1',
    instruction: 'put the red block in the bowl',
    provider: { kind: 'scripted', lines },
    check: CHECK,
  });
  assert.equal(s.error, undefined, JSON.stringify(s.error));
  const id = s.result.id;
  const end = await episodeFinished(r, id, 120_000);
  return { end, events: episodeEvents(r, id) };
}

/** What ran and what the checks said, for a failure message. */
const story = (events: any[]) =>
  JSON.stringify(
    events.filter((e) => e.type === 'outcome' || e.type === 'check').map((e) => [e.tool ?? e.type, e.status, e.reason]),
  );

const outcomes = (events: any[]) =>
  events.filter((e) => e.type === 'outcome').map((e) => [e.tool, e.status, e.outcome?.grasped?.arm]);

test('scripted pick and place on yam-pick-place: the scene check confirms block_in_bowl; the episode ends done', async (t) => {
  const r = await rig(t);
  const { end, events } = await run(r, [...pickLines(), ...placeLines(), call('done', { summary: 'in the bowl' })]);
  assert.equal(end.state, 'done', story(events));
  assert.equal(end.used.decisions, 7);
  assert.deepEqual(outcomes(events), [
    ['move_to', 'ok', undefined],
    ['move_to', 'ok', undefined],
    ['set_gripper', 'ok', true],
    ['move_to', 'ok', undefined],
    ['move_to', 'ok', undefined],
    ['set_gripper', 'ok', false],
  ]);
  const checks = events.filter((e) => e.type === 'check');
  assert.equal(checks.length, 1);
  assert.deepEqual([checks[0].decision, checks[0].kind, checks[0].complete], [7, 'scene', true]);
  assert.deepEqual(checks[0].predicates, { red_in_bowl: true, red_lifted: false, red_held: false });
  assert.equal(end.reason, 'task block_in_bowl: true in the scene: red_in_bowl');
  assert.deepEqual(
    [checks[0].task, checks[0].required, checks[0].held],
    ['block_in_bowl', ['red_in_bowl'], ['red_in_bowl']],
  );
  const scene = (await r.rpc.call('sim.scene', { robot: 'arm1' })).result.scene;
  assert.deepEqual(scene.collisions, { count: 0, last: null });
});

test('a done claimed while the block is still held is rejected by the scene; the model is told and finishes the task', async (t) => {
  const r = await rig(t);
  const early = call('done', { summary: 'picked it up' });
  const { end, events } = await run(r, [...pickLines(), early, ...placeLines(), call('done', { summary: 'placed' })]);
  assert.equal(end.state, 'done', story(events));
  assert.equal(end.used.decisions, 8);
  const checks = events.filter((e) => e.type === 'check');
  assert.deepEqual(
    checks.map((c) => [c.decision, c.complete, c.predicates]),
    [
      [5, false, { red_in_bowl: false, red_lifted: true, red_held: true }],
      [8, true, { red_in_bowl: true, red_lifted: false, red_held: false }],
    ],
  );
  assert.equal(checks[0].reason, 'task block_in_bowl: not yet true in the scene: red_in_bowl');
  assert.deepEqual(checks[0].held, ['red_lifted', 'red_held']);
  // The rejection is the next turn's previous result, with the check's reason.
  const next = events.find((e) => e.type === 'observation' && e.decision === 6);
  assert.match(next.text, /"tool":"done","status":"rejected"/);
  assert.match(next.text, /not yet true in the scene: red_in_bowl/);
  assert.deepEqual(
    outcomes(events).map(([tool, status]) => [tool, status]),
    [
      ['move_to', 'ok'],
      ['move_to', 'ok'],
      ['set_gripper', 'ok'],
      ['move_to', 'ok'],
      ['move_to', 'ok'],
      ['set_gripper', 'ok'],
    ],
  );
});
