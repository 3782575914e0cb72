// End-to-end rig: a daemon in this process serving a single arm (`arm1`, yam) and a dual-arm
// setup (`duo`, dual-yam) over one transport (its embedded broker, an external Mosquitto, or
// the /controller WebSocket), a `brainstem sim` child per robot, and a JSON-RPC client.
import { randomBytes } from 'node:crypto';
import type { TestContext } from 'node:test';
import { startTestDaemon, TEST_TOKEN, type TestDaemon } from '../../helpers/daemon.js';
import { getMosquitto } from '../../helpers/mosquitto.js';
import { RpcTestClient } from '../../helpers/rpc.js';
import { waitFor } from '../../helpers/wait.js';
import { spawnSim, stopChild, type SimChild } from '../../robot/sim/brokers.js';

export type Transport = 'embedded' | 'mosquitto' | 'ws';

export interface Rig {
  d: TestDaemon;
  rpc: RpcTestClient;
  /** Arguments that connect a `brainstem sim` to this daemon as robot `id`. */
  simArgs(id: string, robot: string): string[];
  sims: Map<string, SimChild>;
  startSim(id: string, robot: string, extra?: string[]): SimChild;
  /** MQTT endpoint with credentials the daemon uses (not for ws). */
  broker: { url: string; username: string; password: string } | null;
  base: string;
}

export interface RigOptions {
  robots?: { id: string; robot: string; tracking_error_rad?: number }[];
  /** Extra sim arguments per robot id. */
  simExtra?: Record<string, string[]>;
  config?: Record<string, unknown>;
  /** robots.stale_ms: 1000 by default here, since a test machine loaded by other jobs can pause a
   * process for several hundred ms; the tests of staleness itself use the real default of 200. */
  staleMs?: number;
}

/**
 * The heartbeat timeout of the rig's daemon and sims (s): 1.5 rather than 0.5, for the same
 * reason; the test of heartbeat loss runs the real defaults (process.test.ts).
 */
const RIG_HEARTBEAT_TIMEOUT = 1.5;

const DEFAULT_ROBOTS = [
  { id: 'arm1', robot: 'yam' },
  { id: 'duo', robot: 'dual-yam' },
];

/** Starts the rig, or returns undefined when Mosquitto is wanted but unavailable (test skipped). */
export async function startRig(t: TestContext, transport: Transport, o: RigOptions = {}): Promise<Rig | undefined> {
  const mosquitto = transport === 'mosquitto' ? await getMosquitto(t) : undefined;
  if (transport === 'mosquitto' && !mosquitto) return undefined;
  const base = `bs-e2e-${randomBytes(3).toString('hex')}`;
  const robots = o.robots ?? DEFAULT_ROBOTS;
  const serve = robots.map((r) => ({ ...r, transport: transport === 'ws' ? 'ws' : 'mqtt' }));
  const d = await startTestDaemon(
    {
      mqtt: { base, ...(mosquitto ? { url: mosquitto.urlWithCredentials } : {}) },
      robots: { serve, stale_ms: o.staleMs ?? 1000, heartbeat: { timeout_ms: RIG_HEARTBEAT_TIMEOUT * 1000 } },
    },
    o.config ?? {},
  );
  const broker =
    transport === 'ws'
      ? null
      : mosquitto
        ? { url: mosquitto.url, username: mosquitto.username, password: mosquitto.password }
        : d.mqttEndpoint;
  const withCreds = (b: NonNullable<typeof broker>) =>
    b.url.replace('mqtt://', `mqtt://${encodeURIComponent(b.username)}:${encodeURIComponent(b.password)}@`);
  // On the embedded broker each controller logs in as its own identity (robot.<id>).
  const controllerBroker = (id: string) =>
    transport === 'embedded' && d.mqttIdentities.some((i) => i.username === `robot.${id}`)
      ? d.mqttAs(`robot.${id}`)
      : broker!;
  const simArgs = (id: string, robot: string) => [
    '--robot',
    robot,
    '--id',
    id,
    '--rate',
    '100',
    '--heartbeat-timeout',
    String(RIG_HEARTBEAT_TIMEOUT),
    ...(broker
      ? ['--broker', withCreds(controllerBroker(id)), '--base', base]
      : ['--ws', d.api.url('ws') + '/controller', '--token', TEST_TOKEN]),
  ];
  const sims = new Map<string, SimChild>();
  const rig: Rig = {
    d,
    rpc: await RpcTestClient.connect(d.ws, TEST_TOKEN),
    simArgs,
    sims,
    broker,
    base,
    startSim(id, robot, extra = []) {
      const s = spawnSim([...simArgs(id, robot), ...(o.simExtra?.[id] ?? []), ...extra]);
      sims.set(id, s);
      return s;
    },
  };
  t.after(async () => {
    await rig.rpc.close();
    for (const s of sims.values()) await stopChild(s.child, 'SIGKILL');
    await d.stop();
    await mosquitto?.stop();
  });
  for (const r of robots) rig.startSim(r.id, r.robot);
  return rig;
}

/** Waits until robots.list says the robot is ready (online, matching, fresh). */
export async function waitReady(rig: Rig, id: string, timeoutMs = 20_000): Promise<void> {
  await waitFor(
    async () => {
      const r = await rig.rpc.call('robots.list');
      const robot = r.result.robots.find((x: { id: string }) => x.id === id);
      return robot?.ready ? true : undefined;
    },
    `robot ${id} to be ready (sim stderr: ${rig.sims.get(id)?.stderr() ?? ''})`,
    timeoutMs,
    50,
  );
}

/** robots.call with a native-style call; resolves with the outcome (the RPC result). */
export async function callTool(rig: Rig, robot: string, name: string, args: object, timeoutMs = 30_000): Promise<any> {
  const r = await rig.rpc.call('robots.call', { robot, call: { name, arguments: args } }, timeoutMs);
  if (r.error) throw new Error(`robots.call ${name} failed: ${JSON.stringify(r.error)}`);
  return r.result;
}

/** The TCP pose of an arm now, shifted, as a tool pose. */
export async function poseFromHere(
  rig: Rig,
  robot: string,
  arm: string,
  dx: number,
  dy: number,
  dz: number,
): Promise<{ pose_xyzquat: number[] }> {
  const s = await callTool(rig, robot, 'get_state', {});
  if (!s.arms?.[arm]) throw new Error(`get_state of ${robot} has no arm ${arm}: ${JSON.stringify(s)}`);
  const p = s.arms[arm].tcp as number[];
  return { pose_xyzquat: [p[0]! + dx, p[1]! + dy, p[2]! + dz, p[3]!, p[4]!, p[5]!, p[6]!] };
}

/** A policy episode's events as notified so far. */
export function episodeEvents(rig: Pick<Rig, 'rpc'>, id: string): any[] {
  return rig.rpc.notifications
    .filter((n) => n.method === 'policy.event' && n.params.episode === id)
    .map((n) => n.params);
}

/** The episode's `finished` event, once it comes. */
export function episodeFinished(rig: Pick<Rig, 'rpc'>, id: string, timeoutMs = 60_000): Promise<any> {
  return waitFor(() => episodeEvents(rig, id).find((e) => e.type === 'finished'), `episode ${id} to finish`, timeoutMs);
}
