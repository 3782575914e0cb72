// `brainstem bench link`: (1) tool call received → trajectory published, for 10-pose chunks on
// a 6-joint arm, through a real daemon (embedded broker, planning worker, MQTT publish) with a
// stand-in controller that holds still and refuses every trajectory, so each call ends at once;
// (2) the daemon's event-loop lag while two simulated arms stream state at 500 Hz each and
// WebSocket apps (in a worker thread) subscribe to both.
import { Worker } from 'node:worker_threads';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { connectAsync, type MqttClient } from 'mqtt';
import { createDaemon, type DaemonParts } from '../compose.js';
import { loadConfig } from '../config/load.js';
import { Logs } from '../log.js';
import { daemonTopics, robotTopic, type HeartbeatEcho, type HeartbeatMsg } from '../../robot/link/protocol.js';
import type { SubscriberSetup } from './link-bench-subscribers.js';

export interface LinkBenchOptions {
  dataDir: string;
  calls: number;
  duration: number;
  subscribers: number;
  subscriberRate: number;
  stateRate: number;
}

const quantile = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
const r3 = (x: number) => Math.round(x * 1000) / 1000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function daemonWith(dataDir: string, robots: Record<string, unknown>): Promise<DaemonParts> {
  const config = loadConfig({
    env: {},
    overrides: [
      { data_dir: dataDir, server: { port: 0 }, mqtt: { embedded: { port: 0 } }, logging: { level: 'silent' }, robots },
    ],
  });
  const parts = createDaemon(config, { logs: new Logs(config.logging) });
  await parts.daemon.start();
  return parts;
}

async function untilReady(parts: DaemonParts, ids: string[], ms = 30_000): Promise<void> {
  const end = Date.now() + ms;
  while (ids.some((id) => parts.robots.robot(id)!.session.problem(parts.robots.now()) !== null)) {
    if (Date.now() > end)
      throw new Error(
        `robots ${ids.join(', ')} did not become ready: ${ids.map((id) => parts.robots.robot(id)!.session.problem(parts.robots.now())?.message).join('; ')}`,
      );
    await sleep(50);
  }
}

/** A controller that holds its arm at home, echoes heartbeats, refuses trajectories and finishes stops at once. */
async function standInController(
  parts: DaemonParts,
  id: string,
  joints: string[],
  home: number[],
): Promise<{ client: MqttClient; timer: NodeJS.Timeout }> {
  const base = parts.config.mqtt.base;
  const own = parts.mqttIdentities.find((i) => i.role.kind === 'controller' && i.role.robot === id)!;
  const client = await connectAsync(parts.broker!.url(), {
    username: own.username,
    password: own.password,
    clientId: `${own.username}.bench`,
    protocolVersion: 4,
  });
  const t0 = performance.now();
  const now = () => (performance.now() - t0) / 1000;
  let seq = 0,
    eventSeq = 0;
  let hb: HeartbeatEcho | null = null;
  const event = (cmdId: string, command: 'trajectory' | 'stop', kind: 'rejected' | 'accepted' | 'finished') =>
    client.publish(
      robotTopic(base, id, 'events'),
      JSON.stringify({
        v: 1,
        seq: eventSeq++,
        time: now(),
        id: cmdId,
        arm: 'arm',
        command,
        event: kind,
        ...(kind === 'rejected' ? { reason: 'bench' } : {}),
      }),
      { qos: 1 },
    );
  client.on('message', (topic, payload) => {
    const m = JSON.parse(payload.toString());
    if (topic === daemonTopics(base).heartbeat)
      hb = { seq: (m as HeartbeatMsg).seq, daemon_time: (m as HeartbeatMsg).time, rx_time: now() };
    else if (topic.endsWith('/trajectory')) event(m.id, 'trajectory', 'rejected');
    else if (topic.endsWith('/stop')) {
      event(m.id, 'stop', 'accepted');
      event(m.id, 'stop', 'finished');
    }
  });
  await client.subscribeAsync(
    [daemonTopics(base).heartbeat, robotTopic(base, id, 'trajectory'), robotTopic(base, id, 'stop')],
    { qos: 1 },
  );
  await client.publishAsync(robotTopic(base, id, 'availability'), 'online', { qos: 1, retain: true });
  const description = {
    v: 1,
    robot: id,
    session: `bench-${Date.now()}`,
    time: now(),
    controller: { name: 'bench', version: '1' },
    arms: [{ name: 'arm', joints, gripper: false }],
    state_rate: 100,
    heartbeat_timeout: 0.5,
  };
  await client.publishAsync(robotTopic(base, id, 'description'), JSON.stringify(description), { qos: 1, retain: true });
  const timer = setInterval(() => {
    const state = {
      v: 1,
      seq: seq++,
      time: now(),
      arms: { arm: { q: home, dq: home.map(() => 0), gripper: null, mode: 'hold', trajectory: null, faults: [] } },
      faults: [],
      hb,
    };
    client.publish(robotTopic(base, id, 'state'), JSON.stringify(state), { qos: 0 });
  }, 10);
  return { client, timer };
}

/** Part 1: milliseconds from robots.call receipt to the trajectory handed to MQTT. */
export async function benchPlanToPublish(o: LinkBenchOptions): Promise<Record<string, unknown>> {
  const parts = await daemonWith(o.dataDir, { simulate: false, serve: [{ id: 'bench-arm', robot: 'ur5e' }] });
  const runtime = parts.robots.robot('bench-arm')!;
  const arm = runtime.model.arms[0]!;
  const home = runtime.model.setup.arms[0]!.robot.home;
  const ctl = await standInController(parts, 'bench-arm', arm.joints, home);
  try {
    await untilReady(parts, ['bench-arm']);
    const p = runtime.model.tcpPose('arm', home);
    // Ten targets around a 3 cm circle, 2 mm lower each time, orientation kept.
    const poses = Array.from({ length: 10 }, (_, i) => ({
      pose_xyzquat: [
        p[0]! + 0.03 * Math.cos((2 * Math.PI * i) / 10),
        p[1]! + 0.03 * Math.sin((2 * Math.PI * i) / 10),
        p[2]! - 0.002 * i,
        ...p.slice(3),
      ],
    }));
    const call = { name: 'move_eef_chunk', arguments: { poses } };
    const publish: number[] = [],
      plan: number[] = [];
    let points = 0;
    for (let i = 0; i < o.calls + 5; i++) {
      const out = await runtime.executor.execute(call);
      if (out.reason !== 'bench')
        throw new Error(`bench call ${i} ended with ${out.status} ${out.reason ?? ''}: ${out.message}`);
      if (i < 5) continue; // warm-up
      publish.push(out.timing_ms!.publish!);
      plan.push(out.timing_ms!.plan);
      points = out.plan!.points;
    }
    publish.sort((a, b) => a - b);
    plan.sort((a, b) => a - b);
    return {
      robot: 'ur5e',
      joints: arm.joints.length,
      poses: 10,
      calls: o.calls,
      trajectory_points: points,
      p50_ms: r3(quantile(publish, 0.5)),
      p99_ms: r3(quantile(publish, 0.99)),
      max_ms: r3(publish.at(-1)!),
      plan_p50_ms: r3(quantile(plan, 0.5)),
      target_ms: { p50: 10, p99: 30 },
    };
  } finally {
    clearInterval(ctl.timer);
    await ctl.client.endAsync();
    await parts.daemon.stop();
  }
}

/** Part 2: event-loop lag of the daemon with two arms streaming state and WebSocket subscribers. */
export async function benchStateStreaming(o: LinkBenchOptions): Promise<Record<string, unknown>> {
  const ids = ['arm-a', 'arm-b'];
  const serve = [
    { id: 'arm-a', robot: 'ur5e', sim: true, sim_args: ['--rate', String(o.stateRate)] },
    { id: 'arm-b', robot: 'yam', sim: true, sim_args: ['--rate', String(o.stateRate)] },
  ];
  const parts = await daemonWith(o.dataDir, { simulate: true, serve });
  const setup: SubscriberSetup = {
    url: parts.api.url('ws') + '/ws',
    token: parts.token.value,
    robots: ids,
    clients: o.subscribers,
    rateHz: o.subscriberRate,
  };
  const subs = new Worker(new URL('./link-bench-subscribers.js', import.meta.url), { workerData: setup });
  const count = () =>
    new Promise<number>((resolve) => {
      subs.once('message', resolve);
      subs.postMessage('count');
    });
  try {
    await untilReady(parts, ids);
    await sleep(1000);
    const seq0 = ids.map((id) => parts.robots.robot(id)!.session.latest!.seq);
    const n0 = await count();
    const lag = monitorEventLoopDelay({ resolution: 1 });
    lag.enable();
    await sleep(o.duration * 1000);
    lag.disable();
    const n1 = await count();
    const seq1 = ids.map((id) => parts.robots.robot(id)!.session.latest!.seq);
    const ms = (ns: number) => r3(ns / 1e6);
    return {
      arms: 2,
      state_rate_hz: o.stateRate,
      duration_s: o.duration,
      states_per_s: ids.map((_, i) => Math.round((seq1[i]! - seq0[i]!) / o.duration)),
      ws_subscribers: o.subscribers,
      subscriptions_per_client: ids.length,
      notification_rate_hz: o.subscriberRate,
      notifications_per_s: Math.round((n1 - n0) / o.duration),
      event_loop_lag_ms: { p50: ms(lag.percentile(50)), p99: ms(lag.percentile(99)), max: ms(lag.max) },
      target_ms: { p99: 20 },
    };
  } finally {
    subs.postMessage('close');
    await parts.daemon.stop();
  }
}
