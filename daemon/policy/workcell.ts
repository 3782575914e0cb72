// A simulated workcell in this process for `policy eval` and `policy replay`: a daemon on
// loopback (free ports, its own embedded broker) serving one robot over /controller, and a
// `brainstem sim` child per use, started with a scene and seed and stopped after.
import { pino } from 'pino';
import { CONTROLLER_PATH } from '../../robot/link/ws-envelope.js';
import { createDaemon, type DaemonParts } from '../compose.js';
import type { Config } from '../config/schema.js';
import { Logs } from '../log.js';
import type { RobotRuntime } from '../robots/runtime.js';
import { SimChildren } from '../robots/sim-children.js';

/** The id of the one robot the workcell daemon serves. */
export const WORKCELL_ROBOT = 'workcell';
const POLL_MS = 50;
const READY_TIMEOUT_S = 60;

/** The config layer of the workcell daemon: loopback, free ports, its own broker, one robot over /controller. */
export function workcellLayer(robot: string, base: string): Record<string, unknown> {
  return {
    server: { host: '127.0.0.1', port: 0 },
    mqtt: { url: '', base, embedded: { host: '127.0.0.1', port: 0, tls: { cert: '', key: '' } } },
    robots: { simulate: false, serve: [{ id: WORKCELL_ROBOT, robot, transport: 'ws' }] },
  };
}

/** Starts the workcell daemon (logs to stderr: stdout is the command's result). */
export async function startWorkcell(config: Config): Promise<{ parts: DaemonParts; logs: Logs }> {
  const logs = new Logs(config.logging, { destination: pino.destination({ dest: 2, sync: true }) });
  const parts = createDaemon(config, { logs });
  await parts.daemon.start();
  return { parts, logs };
}

/**
 * Runs `fn` with a fresh simulator of the robot (`--scene` when given, `--seed`) once the robot is
 * ready, with a scene its first sim/scene has arrived, and each of `cameras` has sent a frame
 * (the first renders can pause a simulator on a loaded machine); stops the simulator after.
 */
export async function withSimulator<T>(
  w: { parts: DaemonParts; logs: Logs },
  sim: { scene?: string; seed: number; cameras?: readonly string[] },
  fn: (runtime: RobotRuntime) => Promise<T>,
): Promise<T> {
  const { parts } = w;
  const runtime = parts.robots.robot(WORKCELL_ROBOT)!;
  runtime.simScene = null;
  const sims = new SimChildren({
    robots: [
      {
        ...parts.config.robots.serve[0]!,
        sim_args: [
          ...(sim.scene ? ['--scene', sim.scene] : []),
          ...['--seed', String(sim.seed)],
          // The daemon's heartbeat timeout (robots.heartbeat.timeout_ms), not the simulator's own default.
          ...['--heartbeat-timeout', String(parts.config.robots.heartbeat.timeout_ms / 1000)],
        ],
      },
    ],
    base: parts.config.mqtt.base,
    configsDir: parts.config.robots.configs_dir,
    brokerUrl: () => '',
    controllerUrl: () => parts.api.url('ws') + CONTROLLER_PATH,
    token: parts.token.value,
    tls: parts.config.mqtt.tls,
    log: w.logs.get('robots.sim'),
  });
  await sims.start();
  try {
    const now = parts.robots.now;
    const until = now() + READY_TIMEOUT_S;
    const ready = () =>
      runtime.session.problem(now()) === null &&
      (!sim.scene || runtime.simScene !== null) &&
      (sim.cameras ?? []).every((c) => runtime.cameras.frame(c, 'color') !== undefined);
    while (!ready()) {
      if (now() >= until)
        throw new Error(
          `the simulated workcell (seed ${sim.seed}) was not ready within ${READY_TIMEOUT_S} s (${runtime.session.problem(now())?.message ?? 'no sim/scene or camera frame'})`,
        );
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    }
    return await fn(runtime);
  } finally {
    await sims.stop();
  }
}
