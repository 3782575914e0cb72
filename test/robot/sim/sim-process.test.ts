// The `brainstem sim` process over a real Mosquitto broker and over WebSocket, with the test
// playing the daemon: heartbeat, clock estimation from the echoed heartbeat, one trajectory.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { createServer } from 'node:http';
import mqtt, { type IPublishPacket } from 'mqtt';
import { WebSocketServer, type WebSocket } from 'ws';
import { decodeMessage } from '../../../robot/link/protocol-validate.js';
import { decodeEnvelope, encodeEnvelope } from '../../../robot/link/ws-envelope.js';
import { ClockSync } from '../../../robot/link/clock-sync.js';
import {
  daemonTopics,
  robotTopic,
  type DescriptionMsg,
  type EventMsg,
  type StateMsg,
  type TrajectoryMsg,
} from '../../../robot/link/protocol.js';
import { loadSimRobot } from '../../../robot/sim/robot.js';
import { spawnSim, startMosquitto, stopChild, waitFor } from './brokers.js';

const daemonNow = () => performance.now() / 1000;

/** What the test-as-daemon has seen from one controller. */
class Seen {
  availability: string[] = [];
  description: DescriptionMsg | null = null;
  states: StateMsg[] = [];
  events: (EventMsg & { correlation?: string })[] = [];
  readonly clock = new ClockSync();

  take(suffix: string, raw: Buffer | string, correlation?: Buffer): void {
    const kind = suffix as 'availability' | 'description' | 'state' | 'events';
    const m = decodeMessage(kind, raw);
    assert.ok(m.ok, `invalid ${suffix} from the sim: ${m.ok ? '' : m.message}`);
    if (kind === 'availability') this.availability.push(m.value as string);
    else if (kind === 'description') this.description = m.value as DescriptionMsg;
    else if (kind === 'events')
      this.events.push({ ...(m.value as EventMsg), ...(correlation ? { correlation: correlation.toString() } : {}) });
    else {
      const s = m.value as StateMsg;
      const t4 = daemonNow();
      if (s.hb) this.clock.addRoundTrip(s.hb.daemon_time, s.hb.rx_time, s.time, t4);
      this.states.push(s);
    }
  }

  eventsOf(id: string): string[] {
    return this.events.filter((e) => e.id === id).map((e) => (e.reason ? `${e.event}:${e.reason}` : e.event));
  }

  /** A 0.5 s move of joint 1 by +0.2 rad, starting 0.15 s from now on the controller's clock. */
  trajectory(id: string, expiresIn = 1): TrajectoryMsg {
    const est = this.clock.estimate(daemonNow());
    assert.ok(est, 'no clock estimate yet');
    const now = daemonNow() + est.offset;
    const q0 = this.states.at(-1)!.arms.arm!.q;
    const q1 = q0.map((q, j) => (j === 0 ? q + 0.2 : q));
    return {
      v: 1,
      id,
      arm: 'arm',
      joints: this.description!.arms[0]!.joints,
      time: daemonNow(),
      start_time: now + 0.15,
      expires_at: now + expiresIn,
      points: [
        { t: 0, q: q0 },
        { t: 0.5, q: q1 },
      ],
    };
  }
}

function heartbeat(seq: number) {
  return { v: 1 as const, session: 'test-daemon', seq, time: daemonNow(), period: 0.05, timeout: 0.5 };
}

async function followOneTrajectory(seen: Seen, send: (m: TrajectoryMsg) => void, detail: () => string): Promise<void> {
  await waitFor(
    () => seen.description !== null && seen.availability.includes('online'),
    10_000,
    'availability and description',
    detail,
  );
  const robot = loadSimRobot('yam');
  const joints = robot.arms[0]!.joints;
  assert.deepEqual(seen.description!.arms, [
    {
      name: 'arm',
      joints: joints.map((j) => j.name),
      gripper: true,
      limits: joints.map(({ lower, upper, velocity, acceleration }) => ({ lower, upper, velocity, acceleration })),
    },
  ]);
  await waitFor(
    () => seen.states.filter((s) => s.hb !== null && s.faults.length === 0).length >= 5,
    10_000,
    'states echoing the heartbeat',
    detail,
  );
  assert.ok(
    seen.states.every((s, i, a) => i === 0 || s.seq > a[i - 1]!.seq),
    'state seq must increase',
  );
  const est = seen.clock.estimate(daemonNow())!;
  assert.equal(est.source, 'round_trip');

  const move = seen.trajectory('move-1');
  send(move);
  await waitFor(
    () => seen.eventsOf('move-1').includes('finished'),
    10_000,
    'trajectory finished',
    () => `${JSON.stringify(seen.events)} ${detail()}`,
  );
  assert.deepEqual(seen.eventsOf('move-1'), ['accepted', 'started', 'finished']);
  const goal = move.points[1]!.q;
  await waitFor(() => seen.states.at(-1)!.arms.arm!.mode === 'hold', 2000, 'hold after finishing');
  seen.states
    .at(-1)!
    .arms.arm!.q.forEach((q, j) => assert.ok(Math.abs(q - goal[j]!) <= 0.01, `joint ${j}: ${q} vs ${goal[j]}`));
  assert.ok(
    seen.states.some((s) => s.arms.arm!.mode === 'follow' && s.arms.arm!.trajectory === 'move-1'),
    'no state showed the arm following',
  );

  send(seen.trajectory('late-1', -1));
  await waitFor(() => seen.eventsOf('late-1').length > 0, 5000, 'rejection of the expired trajectory');
  assert.deepEqual(seen.eventsOf('late-1'), ['rejected:expired']);
}

interface MqttRun {
  seen: Seen;
  send(suffix: 'trajectory' | 'stop', m: object): void;
  heartbeat(on: boolean): void;
  sim: ReturnType<typeof spawnSim>;
}

/** Mosquitto + the sim as a child + the test as the daemon (heartbeat every 50 ms). */
async function withMosquittoSim(
  t: { skip(m: string): void },
  args: string[],
  body: (r: MqttRun) => Promise<void>,
): Promise<void> {
  const broker = await startMosquitto();
  // CI promises a broker: there a missing one is a failure, elsewhere a skip.
  if (typeof broker === 'string' && process.env.CI === 'true') throw new Error(broker);
  if (typeof broker === 'string') return t.skip(broker);
  const base = `bs-test-${randomBytes(4).toString('hex')}`;
  const id = 'simbot';
  const seen = new Seen();
  const client = await mqtt.connectAsync(broker.url, { protocolVersion: 5, clientId: `test-daemon-${base}` });
  const sim = spawnSim([
    '--robot',
    'yam',
    '--id',
    id,
    '--broker',
    broker.url,
    '--base',
    base,
    '--rate',
    '100',
    ...args,
  ]);
  let seq = 0;
  let beating = true;
  const beat = setInterval(
    () => beating && client.publish(daemonTopics(base).heartbeat, JSON.stringify(heartbeat(seq++)), { qos: 0 }),
    50,
  );
  try {
    await client.subscribeAsync(`${base}/robots/${id}/#`, { qos: 1 });
    client.on('message', (topic, payload, packet: IPublishPacket) => {
      const suffix = topic.split('/').pop()!;
      // An empty retained payload is the test clearing the broker afterwards.
      if (payload.length && ['availability', 'description', 'state', 'events'].includes(suffix))
        seen.take(suffix, payload, packet.properties?.correlationData);
    });
    await body({
      seen,
      sim,
      send: (suffix, m) => client.publish(robotTopic(base, id, suffix), JSON.stringify(m), { qos: 1 }),
      heartbeat: (on) => (beating = on),
    });
  } finally {
    clearInterval(beat);
    await stopChild(sim.child, 'SIGKILL');
    await client.publishAsync(robotTopic(base, id, 'availability'), '', { retain: true, qos: 1 });
    await client.publishAsync(robotTopic(base, id, 'description'), '', { retain: true, qos: 1 });
    await client.endAsync();
    await broker.stop();
  }
}

for (const version of ['auto', '3.1.1'] as const) {
  test(`sim over Mosquitto (--mqtt ${version}): availability, description, state, a trajectory followed, expiry, last will`, (t) =>
    withMosquittoSim(t, ['--mqtt', version], async ({ seen, send, sim }) => {
      await followOneTrajectory(seen, (m) => send('trajectory', m), sim.stderr);
      const finished = seen.events.find((e) => e.id === 'move-1' && e.event === 'finished')!;
      // MQTT 5 carries the command id as correlation data; 3.1.1 has only the payload's id.
      assert.equal(finished.correlation, version === 'auto' ? 'move-1' : undefined);
      await stopChild(sim.child, 'SIGKILL');
      await waitFor(() => seen.availability.at(-1) === 'offline', 5000, 'the last will (offline)');
    }));
}

test('sim over Mosquitto: heartbeat loss aborts a move and stops the arm; a disconnect fault fires the last will, then reconnects', (t) =>
  withMosquittoSim(
    t,
    ['--heartbeat-timeout', '0.3', '--fault', 'disconnect,at=4.5,for=1'],
    async ({ seen, send, heartbeat: beat, sim }) => {
      await waitFor(
        () =>
          seen.description !== null && seen.states.filter((s) => s.hb !== null && s.faults.length === 0).length >= 5,
        10_000,
        'live states',
        sim.stderr,
      );
      const long = seen.trajectory('long-1');
      long.points[1]!.t = 5;
      send('trajectory', long);
      await waitFor(() => seen.eventsOf('long-1').includes('started'), 5000, 'the long move to start');
      beat(false);
      await waitFor(
        () => seen.eventsOf('long-1').includes('aborted:heartbeat_lost'),
        5000,
        'abort on heartbeat loss',
        () => JSON.stringify(seen.events),
      );
      assert.ok(seen.events.some((e) => e.event === 'fault' && e.reason === 'heartbeat_lost' && e.id === null));
      await waitFor(() => seen.states.at(-1)!.arms.arm!.mode === 'hold', 5000, 'the arm at rest');
      assert.deepEqual(seen.states.at(-1)!.faults, ['no_heartbeat']);
      beat(true);
      await waitFor(
        () => seen.availability.includes('offline'),
        10_000,
        'the last will from the disconnect fault',
        sim.stderr,
      );
      await waitFor(
        () => seen.availability.at(-1) === 'online',
        10_000,
        'availability online after reconnecting',
        sim.stderr,
      );
      assert.deepEqual(seen.availability.slice(-3), ['online', 'offline', 'online']);
      assert.match(sim.stderr(), /fault: disconnect[\s\S]*fault over: reconnecting[\s\S]*connected/);
    },
  ));

test('sim over Mosquitto: stopped (SIGSTOP) mid-move past its end and continued, it holds: the move is aborted, not finished, and a stop sent meanwhile is obeyed', (t) =>
  withMosquittoSim(t, ['--heartbeat-timeout', '0.3'], async ({ seen, send, sim }) => {
    await waitFor(
      () => seen.description !== null && seen.states.filter((s) => s.hb !== null && s.faults.length === 0).length >= 5,
      10_000,
      'live states',
      sim.stderr,
    );
    const move = seen.trajectory('move-1');
    move.points[1]!.t = 2;
    const q0 = move.points[0]!.q[0]!;
    send('trajectory', move);
    await waitFor(() => seen.eventsOf('move-1').includes('started'), 5000, 'the move to start');
    sim.child.kill('SIGSTOP');
    // Longer than the whole move: the old simulator caught up through it and reported it finished.
    await sleep(3000);
    send('stop', { v: 1, id: 'stop-1', arm: null, time: daemonNow(), reason: 'test' });
    await sleep(200);
    sim.child.kill('SIGCONT');
    await waitFor(
      () => seen.eventsOf('stop-1').includes('finished'),
      5000,
      'the stop sent during the stall to finish',
      () => JSON.stringify(seen.events),
    );
    assert.deepEqual(seen.eventsOf('move-1'), ['accepted', 'started', 'aborted:heartbeat_lost']);
    assert.ok(
      seen.events.some((e) => e.event === 'fault' && e.reason === 'controller_stall'),
      JSON.stringify(seen.events),
    );
    await waitFor(() => seen.states.at(-1)!.arms.arm!.mode === 'hold', 5000, 'the arm holding');
    const q = seen.states.at(-1)!.arms.arm!.q[0]!;
    assert.ok(q - q0 < 0.15, `joint 1 moved ${(q - q0).toFixed(3)} rad of the 0.2 rad move`);
  }));

test('sim over WebSocket /controller with a token: envelopes, a trajectory followed, refused without the token', async () => {
  const server = createServer();
  const wss = new WebSocketServer({ noServer: true });
  let socket: WebSocket | null = null;
  const seen = new Seen();
  server.on('upgrade', (req, sock, head) => {
    if (req.url !== '/controller' || req.headers.authorization !== 'Bearer s3cret') {
      sock.end('HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\n\r\n');
      return;
    }
    wss.handleUpgrade(req, sock, head, (ws) => {
      socket = ws;
      ws.on('message', (data) => {
        const env = decodeEnvelope(data.toString(), 'controller');
        assert.ok(env.ok, env.ok ? '' : env.message);
        assert.equal(env.value.robot, 'wsbot');
        const p = env.value.payload;
        seen.take(env.value.type, typeof p === 'string' ? p : JSON.stringify(p));
      });
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  const refused = spawnSim([
    '--robot',
    'yam',
    '--id',
    'wsbot',
    '--ws',
    `ws://127.0.0.1:${port}/controller`,
    '--token',
    'wrong',
  ]);
  const sim = spawnSim([
    '--robot',
    'yam',
    '--id',
    'wsbot',
    '--ws',
    `ws://127.0.0.1:${port}/controller`,
    '--token',
    's3cret',
    '--rate',
    '100',
  ]);
  let seq = 0;
  const beat = setInterval(() => socket?.send(encodeEnvelope('heartbeat', null, heartbeat(seq++))), 50);
  try {
    await waitFor(
      () => refused.stderr().includes('HTTP 401'),
      10_000,
      'the refused sim to report HTTP 401',
      refused.stderr,
    );
    const send = (m: TrajectoryMsg) => socket!.send(encodeEnvelope('trajectory', 'wsbot', m));
    await followOneTrajectory(seen, send, sim.stderr);
    await stopChild(sim.child, 'SIGTERM');
    assert.equal(seen.availability.at(-1), 'offline', 'a clean shutdown says offline');
  } finally {
    clearInterval(beat);
    await stopChild(refused.child, 'SIGKILL');
    await stopChild(sim.child, 'SIGKILL');
    for (const c of wss.clients) c.terminate();
    await new Promise((r) => server.close(r));
  }
});
