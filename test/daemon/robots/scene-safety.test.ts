// The daemon's safety check covers the simulated workcell it receives on `sim/scene`: a move that
// would drive the closed gripper into a block is refused before anything moves (the simulator
// sees no collision), naming the link, the object and the clearance.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadArms } from '../../../robot/description/loader.js';
import { loadScene } from '../../../robot/sim/scene/scene-config.js';
import { SimWorld } from '../../../robot/sim/scene/world.js';
import { waitFor } from '../../helpers/wait.js';
import { callTool, startRig, waitReady } from './harness.js';

function objectXY(name: string): [number, number] {
  const scene = loadScene('yam-pick-place');
  const arms = loadArms('yam');
  assert.ok(scene.ok && arms.ok);
  const o = new SimWorld(scene.value, arms.value.setup, 5).truth().objects.find((x) => x.name === name)!;
  return [o.pose[0]!, o.pose[1]!];
}

test('a move driving the closed gripper down into a block is refused (object, link, clearance); the simulator sees no collision', async (t) => {
  const rig = await startRig(t, 'embedded', {
    robots: [{ id: 'arm1', robot: 'yam' }],
    simExtra: { arm1: ['--scene', 'yam-pick-place', '--seed', '5'] },
  });
  if (!rig) return;
  await waitReady(rig, 'arm1');
  await waitFor(
    async () => (await rig.rpc.call('sim.scene', { robot: 'arm1' })).result.scene ?? undefined,
    'a sim.scene',
  );
  const [x, y] = objectXY('green_block');
  const to = (z: number) => callTool(rig, 'arm1', 'move_to', { target: { pose_xyzquat: [x, y, z, 0, 1, 0, 0] } });
  const closed = await callTool(rig, 'arm1', 'set_gripper', { gripper: 0 });
  assert.equal(closed.status, 'ok', closed.message);
  const over = await to(0.15);
  assert.equal(over.status, 'ok', over.message);
  const down = await to(0.035);
  assert.equal(down.status, 'infeasible', down.message);
  assert.equal(down.reason, 'object');
  assert.match(
    down.message,
    /link "gripper" at sample \d+ is -\d+\.\d mm from object "green_block" \(inside it\), below the clearance 0\.0 mm/,
  );
  const check = await callTool(rig, 'arm1', 'check_path', { poses: [{ pose_xyzquat: [x, y, 0.035, 0, 1, 0, 0] }] });
  assert.equal(check.status, 'infeasible', check.message);
  // Opened, the fingers may enclose the block: the same move is planned and runs without a collision.
  assert.equal((await callTool(rig, 'arm1', 'set_gripper', { gripper: 1 })).status, 'ok');
  const enclosing = await to(0.035);
  assert.equal(enclosing.status, 'ok', enclosing.message);
  const scene = (await rig.rpc.call('sim.scene', { robot: 'arm1' })).result.scene;
  assert.deepEqual(scene.collisions, { count: 0, last: null });
});
