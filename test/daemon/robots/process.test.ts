// The daemon as a process: on its defaults it starts a simulated arm that moves end to end;
// killed mid-move, the controller brings the arm to rest within its heartbeat timeout.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { EventMsg, StateMsg } from '../../../robot/link/protocol.js';
import { spawnTestDaemon, startTestDaemon } from '../../helpers/daemon.js';
import { getMosquitto } from '../../helpers/mosquitto.js';
import { connectMqtt } from '../../helpers/mqtt.js';
import { RpcTestClient } from '../../helpers/rpc.js';
import { tempDir } from '../../helpers/temp.js';
import { waitFor } from '../../helpers/wait.js';
import { spawnSim, stopChild } from '../../robot/sim/brokers.js';

async function ready(rpc: RpcTestClient, id: string): Promise<void> {
  await waitFor(
    async () => ((await rpc.call('robots.list')).result.robots.find((r: any) => r.id === id)?.ready ? true : undefined),
    `robot ${id} ready`,
    30_000,
    100,
  );
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

test('brainstem start on its defaults runs a simulated yam: robots.call move_to reaches; the sim ends with the daemon', async (t) => {
  // Defaults but the stale limit: a CI machine loaded by other test files can starve the sim child
  // past 200 ms (as test/daemon/robots/harness.ts allows for, too).
  const d = await spawnTestDaemon({ BRAINSTEM_ROBOTS_SIMULATE: 'true', BRAINSTEM_ROBOTS_STALE_MS: '1000' });
  t.after(() => d.cleanup());
  const rpc = await RpcTestClient.connect(d.runtime.ws, d.token);
  t.after(() => rpc.close());
  await ready(rpc, 'yam');
  const state = (await rpc.call('robots.call', { robot: 'yam', call: { name: 'get_state', arguments: {} } })).result;
  const p = state.arms.arm.tcp;
  const target = { pose_xyzquat: [p[0] + 0.03, p[1], p[2] - 0.02, p[3], p[4], p[5], p[6]] };
  const moved = (
    await rpc.call('robots.call', { robot: 'yam', call: { name: 'move_to', arguments: { target } } }, 30_000)
  ).result;
  assert.equal(moved.status, 'ok', moved.message);
  const health = (await rpc.call('system.health')).result;
  const pid = health.services['robot-sims'].detail.pids.yam as number;
  assert.ok(alive(pid), 'the simulated controller runs');
  d.child.kill('SIGKILL');
  await d.exited;
  // Its stdin (a pipe from the daemon) closes with the daemon: the sim stops by itself.
  await waitFor(() => (alive(pid) ? undefined : true), 'the orphaned sim to exit', 10_000);
});

test('the daemon dies mid-move (SIGKILL, external Mosquitto): the controller stops the arm within its heartbeat timeout', async (t) => {
  const broker = await getMosquitto(t);
  if (!broker) return;
  t.after(() => broker.stop());
  const base = `bs-die-${process.pid}-${Date.now() % 100000}`;
  const dir = tempDir('brainstem-robots-');
  t.after(() => dir.remove());
  const file = join(dir.path, 'robots.yaml');
  writeFileSync(file, `robots:\n  serve:\n    - { id: arm1, robot: yam }\n`);
  const d = await spawnTestDaemon(
    { BRAINSTEM_MQTT_URL: broker.urlWithCredentials, BRAINSTEM_MQTT_BASE: base },
    { args: ['--config', file] },
  );
  t.after(() => d.cleanup());
  const sim = spawnSim([
    '--robot',
    'yam',
    '--id',
    'arm1',
    '--broker',
    broker.urlWithCredentials,
    '--base',
    base,
    '--heartbeat-timeout',
    '0.5',
  ]);
  t.after(() => stopChild(sim.child, 'SIGKILL'));
  const watcher = await connectMqtt(broker);
  t.after(() => watcher.endAsync());
  const states: StateMsg[] = [];
  const events: EventMsg[] = [];
  watcher.on('message', (topic, payload) => {
    if (topic.endsWith('/state')) states.push(JSON.parse(payload.toString()));
    if (topic.endsWith('/events')) events.push(JSON.parse(payload.toString()));
  });
  await watcher.subscribeAsync([`${base}/robots/arm1/state`, `${base}/robots/arm1/events`], { qos: 1 });
  const rpc = await RpcTestClient.connect(d.runtime.ws, d.token);
  await ready(rpc, 'arm1');
  const p = (await rpc.call('robots.call', { robot: 'arm1', call: { name: 'get_state', arguments: {} } })).result.arms
    .arm.tcp;
  // Out and back four times (several seconds), so a loaded machine still kills the daemon
  // mid-trajectory: twice was once short enough for the trajectory to end before the heartbeat
  // timeout in a loaded fresh-clone .ci/run (a fault, but nothing left to abort).
  const at = (dx: number) => ({ pose_xyzquat: [p[0] + dx, p[1], p[2], p[3], p[4], p[5], p[6]] });
  const poses = [at(0.08), at(0), at(0.08), at(0), at(0.08), at(0), at(0.08), at(0)];
  // Sent raw: its reply never comes (the daemon is killed), and call() would keep a timer running.
  rpc.ws.send(
    JSON.stringify({
      jsonrpc: '2.0',
      id: 'move',
      method: 'robots.call',
      params: { robot: 'arm1', call: { name: 'move_eef_chunk', arguments: { poses } } },
    }),
  );
  await waitFor(
    () =>
      states.at(-1)?.arms.arm?.mode === 'follow' && Math.max(...states.at(-1)!.arms.arm!.dq.map(Math.abs)) > 0.02
        ? true
        : undefined,
    'the arm moving',
  );
  const lastHb = states.at(-1)!.hb!;
  d.child.kill('SIGKILL');
  await d.exited;
  await rpc.close();
  await waitFor(
    () =>
      events.some((e) => e.event === 'fault' && ['heartbeat_lost', 'daemon_offline'].includes(e.reason!))
        ? true
        : undefined,
    'the controller to notice',
    10_000,
  );
  const fault = events.find((e) => e.event === 'fault' && ['heartbeat_lost', 'daemon_offline'].includes(e.reason!))!;
  // Controller clock: the fault comes within the heartbeat timeout of the last heartbeat it saw.
  const lastRx = Math.max(lastHb.rx_time, ...states.filter((s) => s.hb).map((s) => s.hb!.rx_time));
  assert.ok(
    fault.time - lastRx <= 0.5 + 0.01,
    `fault ${fault.reason} ${(fault.time - lastRx).toFixed(3)} s after the last heartbeat`,
  );
  // A trajectory still running at the fault is aborted with its reason; the chunk's pieces can
  // end inside the heartbeat timeout on a loaded machine, and then none is left to abort.
  const traj = events.filter((e) => e.command === 'trajectory' && e.seq < fault.seq);
  const running =
    traj.filter((e) => e.event === 'started').length >
    traj.filter((e) => ['finished', 'aborted'].includes(e.event)).length;
  assert.ok(
    !running || events.some((e) => e.event === 'aborted' && e.reason === fault.reason),
    `the running trajectory was aborted (events ${events.map((e) => `${e.event}:${e.command ?? ''}:${e.reason ?? ''}`).join(' ')})`,
  );
  assert.ok(
    !events.some((e) => e.command === 'trajectory' && e.event === 'started' && e.seq > fault.seq),
    'no trajectory starts after the fault',
  );
  await waitFor(
    () =>
      states.at(-1)!.arms.arm!.mode === 'hold' && Math.max(...states.at(-1)!.arms.arm!.dq.map(Math.abs)) < 0.01
        ? true
        : undefined,
    'the arm at rest',
    10_000,
  );
  assert.deepEqual(states.at(-1)!.faults, ['no_heartbeat']);
});

test('a simulated controller that cannot start: health degraded with its last line, and it is restarted', async (t) => {
  const d = await startTestDaemon({
    robots: { simulate: true, serve: [{ id: 'bad', robot: 'yam', sim: true, sim_args: ['--rate', '0'] }] },
  });
  t.after(() => d.stop());
  const health = await waitFor(
    () => {
      const h = d.daemon.health();
      return h.services['robot-sims']!.status === 'degraded' ? h : undefined;
    },
    'the sims service to be degraded',
    20_000,
  );
  assert.match(
    String(health.services['robot-sims']!.detail!.reason),
    /simulated controller bad exited \(brainstem: --rate must be a number in \[1, 1000\] \(got "0"\)\); restarting/,
  );
  assert.equal(health.status, 'degraded');
  await waitFor(
    () =>
      (d.daemon.health().services['robot-sims']!.detail!.restarts as Record<string, number>).bad! >= 1
        ? true
        : undefined,
    'a restart',
    20_000,
  );
});
