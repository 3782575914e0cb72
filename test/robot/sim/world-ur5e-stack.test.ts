// The shipped ur5e-stack scene can be solved by the arm it is laid out for: the UR5e with its
// gripper (ur5e-2f85, TCP 0.15 m out of the flange) picks the green block, sets it on the red one
// and the success predicate turns true — through the executor, the planner and the simulated
// controller, on a simulated clock.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadArms } from '../../../robot/description/loader.js';
import { loadScene } from '../../../robot/sim/scene/scene-config.js';
import { SimWorld } from '../../../robot/sim/scene/world.js';
import { evaluateAll } from '../../../robot/sim/scene/predicates.js';
import { Loopback } from '../tools/loopback.js';

const call = (name: string, args: object) => ({ name, arguments: args });

test('ur5e-stack: pick the green block, place it on the red one: green_on_red', async () => {
  const scene = loadScene('ur5e-stack');
  const arms = loadArms('ur5e-2f85');
  assert.ok(scene.ok && arms.ok, JSON.stringify(!scene.ok ? scene.issues : !arms.ok ? arms.issues : ''));
  const world = new SimWorld(scene.value, arms.value.setup, 3);
  const lb = new Loopback('ur5e-2f85', {}, {}, world);
  await lb.run(0.3);
  const at = (name: string) => {
    const p = world.objects.find((o) => o.name === name)!.pose;
    return [p[3]!, p[7]!, p[11]!];
  };
  const down = lb.model.tcpPose('arm', lb.session.latest!.arms.arm!.q).slice(3);
  const move = async (x: number, y: number, z: number) => {
    const o = await lb.outcome(lb.exec.execute(call('move_to', { target: { pose_xyzquat: [x, y, z, ...down] } })));
    assert.equal(o.status, 'ok', `move to ${[x, y, z]}: ${o.message}`);
  };
  const [gx, gy, gz] = at('green_block');
  await move(gx, gy, gz + 0.1);
  await move(gx, gy, gz);
  const closed = await lb.outcome(lb.exec.execute(call('set_gripper', { gripper: 0 })));
  assert.deepEqual(closed.grasped, { arm: true }, closed.message);
  await move(gx, gy, gz + 0.12);
  const [rx, ry, rz] = at('red_block');
  // Green's centre one block (5 mm above contact) over red's centre.
  await move(rx, ry, rz + 0.055 + 0.1);
  await move(rx, ry, rz + 0.055);
  const opened = await lb.outcome(lb.exec.execute(call('set_gripper', { gripper: 1 })));
  assert.equal(opened.status, 'ok', opened.message);
  await lb.run(0.5);
  const truth = evaluateAll(world.scene, world.objects);
  assert.equal(truth.green_on_red, true, `green at ${at('green_block')}, red at ${at('red_block')}`);
  assert.equal(truth.blue_on_green, false);
  const [, , greenZ] = at('green_block');
  assert.ok(Math.abs(greenZ - (rz + 0.05)) < 1e-6, `green centre z ${greenZ} on red (centre ${rz})`);
});
