// The simulated workcell end to end: `brainstem sim --scene` publishes its ground truth beside
// the protocol (MQTT `sim/scene`, WebSocket envelope `sim_scene`); the daemon keeps the latest
// and `sim.scene` returns it. The CLI refuses a scene laid out for another robot.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadArms } from '../../../robot/description/loader.js';
import { loadScene } from '../../../robot/sim/scene/scene-config.js';
import { SimWorld } from '../../../robot/sim/scene/world.js';
import { runCli } from '../../helpers/daemon.js';
import { connectMqtt } from '../../helpers/mqtt.js';
import { waitFor } from '../../helpers/wait.js';
import { callTool, startRig, waitReady, type Transport } from './harness.js';

/** The ground truth at start of yam-pick-place with seed 5, computed here. */
function expected(): SimWorld {
  const scene = loadScene('yam-pick-place');
  const arms = loadArms('yam');
  assert.ok(scene.ok && arms.ok);
  return new SimWorld(scene.value, arms.value.setup, 5);
}

for (const transport of ['embedded', 'mosquitto', 'ws'] as Transport[]) {
  test(`sim.scene over ${transport}: the seeded start of yam-pick-place, then a closing gripper beside the blocks grasps nothing`, async (t) => {
    const rig = await startRig(t, transport, {
      robots: [{ id: 'arm1', robot: 'yam' }],
      simExtra: { arm1: ['--scene', 'yam-pick-place', '--seed', '5'] },
    });
    if (!rig) return;
    await waitReady(rig, 'arm1');
    const scene = await waitFor(
      async () => {
        const r = (await rig.rpc.call('sim.scene', { robot: 'arm1' })).result;
        return r.scene ? r : undefined;
      },
      `a sim.scene (sim stderr: ${rig.sims.get('arm1')!.stderr()})`,
    );
    assert.equal(scene.robot, 'arm1');
    assert.equal(typeof scene.age_ms, 'number');
    const want = expected().truth();
    assert.equal(scene.scene.scene, 'yam-pick-place');
    assert.deepEqual(scene.scene.objects, want.objects);
    assert.deepEqual(scene.scene.predicates, { red_in_bowl: false, red_lifted: false, red_held: false });
    assert.deepEqual(scene.scene.tasks, { block_in_bowl: ['red_in_bowl'], lift_red: ['red_held', 'red_lifted'] });
    assert.equal(scene.scene.seed, 5);
    assert.deepEqual(scene.scene.collisions, { count: 0, last: null });
    assert.match(
      rig.sims.get('arm1')!.stderr(),
      /scene yam-pick-place \(seed 5\): red_block, green_block, blue_block, bowl/,
    );
    const closed = await callTool(rig, 'arm1', 'set_gripper', { gripper: 0 });
    assert.equal(closed.status, 'ok', closed.message);
    const after = (await rig.rpc.call('sim.scene', { robot: 'arm1' })).result.scene;
    assert.ok(after.objects.every((o: { held_by: string | null }) => o.held_by === null));
  });
}

test('pick and place through robots.call: move over the red block, close (grasped), lift, over the bowl, open: red_in_bowl', async (t) => {
  const rig = await startRig(t, 'embedded', {
    robots: [{ id: 'arm1', robot: 'yam' }],
    simExtra: { arm1: ['--scene', 'yam-pick-place', '--seed', '5'] },
  });
  if (!rig) return;
  await waitReady(rig, 'arm1');
  const [x, y] = expected().truth().objects[0]!.pose;
  // The TCP pointing down (a half turn about y), the fingers closing along world y.
  const to = async (px: number, py: number, pz: number) => {
    const r = await callTool(rig, 'arm1', 'move_to', { target: { pose_xyzquat: [px, py, pz, 0, 1, 0, 0] } });
    assert.equal(r.status, 'ok', r.message);
  };
  const truth = (pred: (s: any) => boolean, what: string) =>
    waitFor(async () => {
      const s = (await rig.rpc.call('sim.scene', { robot: 'arm1' })).result.scene;
      return s && pred(s) ? s : undefined;
    }, what);
  await to(x!, y!, 0.15);
  await to(x!, y!, 0.035);
  const closed = await callTool(rig, 'arm1', 'set_gripper', { gripper: 0 });
  assert.equal(closed.status, 'ok', closed.message);
  assert.deepEqual(closed.grasped, { arm: true });
  await truth((s) => s.predicates.red_held, 'red_held');
  await to(x!, y!, 0.15);
  await truth((s) => s.predicates.red_lifted, 'red_lifted');
  await to(0.3, -0.17, 0.15);
  const opened = await callTool(rig, 'arm1', 'set_gripper', { gripper: 1 });
  assert.deepEqual(opened.grasped, { arm: false });
  const end = await truth((s) => s.predicates.red_in_bowl, 'red_in_bowl');
  assert.deepEqual(end.predicates, { red_in_bowl: true, red_lifted: false, red_held: false });
  assert.deepEqual(end.collisions, { count: 0, last: null });
});

test('sim.scene of a robot without a workcell is null; an invalid one is counted, not kept; an unknown robot is invalid params', async (t) => {
  const rig = await startRig(t, 'embedded', { robots: [{ id: 'arm1', robot: 'yam' }] });
  if (!rig) return;
  await waitReady(rig, 'arm1');
  assert.deepEqual((await rig.rpc.call('sim.scene', { robot: 'arm1' })).result, {
    robot: 'arm1',
    age_ms: null,
    scene: null,
  });
  // The robot's own identity may publish there, but a malformed truth is refused.
  const c = await connectMqtt(rig.d.mqttAs('robot.arm1'), { clientId: 'robot.arm1.test' });
  t.after(() => c.endAsync());
  await c.publishAsync(`${rig.base}/robots/arm1/sim/scene`, JSON.stringify({ v: 1, scene: 'x' }), { qos: 1 });
  await waitFor(async () => {
    const r = (await rig.rpc.call('robots.list')).result.robots[0];
    return r.invalid_messages > 0 ? true : undefined;
  }, 'the invalid sim/scene counted');
  assert.equal((await rig.rpc.call('sim.scene', { robot: 'arm1' })).result.scene, null);
  // An empty state is malformed too (only retained topics are cleared by empty payloads).
  const before = (await rig.rpc.call('robots.list')).result.robots[0].invalid_messages;
  await c.publishAsync(`${rig.base}/robots/arm1/state`, '', { qos: 1 });
  await waitFor(async () => {
    const r = (await rig.rpc.call('robots.list')).result.robots[0];
    return r.invalid_messages > before ? true : undefined;
  }, 'the empty state counted');
  const bad = await rig.rpc.call('sim.scene', { robot: 'nope' });
  assert.equal(bad.error?.code, -32602);
});

test('brainstem sim --scene: a scene for another robot, or a missing one, is a usage error naming both', async () => {
  const other = await runCli(['sim', '--robot', 'ur5e', '--scene', 'yam-pick-place']);
  assert.equal(other.code, 2);
  assert.match(other.stderr, /--scene yam-pick-place is laid out for robot "yam", not "ur5e" \(--robot\)/);
  const missing = await runCli(['sim', '--robot', 'yam', '--scene', 'no-such-scene']);
  assert.equal(missing.code, 2);
  assert.match(missing.stderr, /--scene: scene "no-such-scene": config file: cannot be read/);
});
