// `brainstem sim`: a simulated robot controller process that connects to the daemon over MQTT
// (a broker) or the daemon's WebSocket, and behaves like a real controller (robot/sim/).
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Command } from 'commander';
import { group, type CommandRegistrar } from './group.js';
import { CliError } from './exit.js';
import { MQTT_SCHEMES } from '../config/schema.js';
import { redactUrl } from '../config/secrets.js';
import { readTlsFiles } from '../mqtt/tls.js';
import { formatIssue } from '../../robot/common/validation/issue.js';
import { loadSimSetup, simRobotFrom } from '../../robot/sim/robot.js';
import { loadScene } from '../../robot/sim/scene/scene-config.js';
import { SimWorld } from '../../robot/sim/scene/world.js';
import { cameraTickRate, workcellFrames } from '../../robot/sim/render/sim-cameras.js';
import type { SetupDescription } from '../../robot/description/types.js';
import { parseFault, type Fault } from '../../robot/sim/faults.js';
import { startSim } from '../../robot/sim/process.js';
import { ControllerMqtt, type MqttVersion } from '../../robot/link/controller-mqtt.js';
import { ControllerWs } from '../../robot/link/controller-ws.js';
import { DEFAULT_BASE, ROBOT_ID_PATTERN, checkBase } from '../../robot/link/protocol.js';

const VERSION = '0.1.0';
/** Longest wait for the link to say goodbye on a stop. */
const CLOSE_WAIT_MS = 300;

interface SimFlags {
  robot?: string;
  scene?: string;
  cameraRate?: string;
  id?: string;
  broker?: string;
  ws?: string;
  token?: string;
  base: string;
  mqtt: string;
  rate: string;
  lag: string;
  latency: string;
  decel: string;
  heartbeatTimeout: string;
  stallAfter?: string;
  trackingLimit?: string;
  fault: string[];
  seed: string;
  exitOnStdinClose?: boolean;
  ca?: string;
  cert?: string;
  key?: string;
}

/** A broker URL mqtt.js can dial, else a usage error naming where it came from. */
function brokerUrlCheck(url: string, source: string): void {
  let protocol: string;
  try {
    protocol = new URL(url).protocol;
  } catch {
    throw new CliError(
      `${source}: must be a broker URL such as mqtt://127.0.0.1:1883, got ${JSON.stringify(redactUrl(url))}`,
      2,
    );
  }
  if (!MQTT_SCHEMES.includes(protocol)) {
    const names = MQTT_SCHEMES.map((p) => p.slice(0, -1)).join(', ');
    throw new CliError(`${source}: the scheme must be one of ${names}, got ${JSON.stringify(redactUrl(url))}`, 2);
  }
}

/** `<username>.sim-…` when the URL names an identity (brokers with brainstem's ACLs bind ids so). */
function simClientId(url: string, robot: string): string {
  const rand = randomBytes(3).toString('hex');
  let user = '';
  try {
    user = decodeURIComponent(new URL(url).username);
  } catch {
    // An unparsable URL fails in the MQTT client with its own message.
  }
  return user ? `${user}.sim-${robot}-${rand}` : `brainstem-sim-${robot}-${rand}`;
}

function num(flag: string, value: string, lo: number, hi: number): number {
  const n = Number(value);
  if (value.trim() === '' || !Number.isFinite(n) || n < lo || n > hi)
    throw new CliError(`${flag} must be a number in [${lo}, ${hi}] (got "${value}")`, 2);
  return n;
}

export const registerSim: CommandRegistrar = (program: Command) => {
  // `sim` and `sim render` share --scene and --seed: commander leaves options after a subcommand
  // to it only when the program, and not just `sim`, has positional options.
  program.enablePositionalOptions();
  group(program, 'sim')
    // Required, but checked in the action: commander would demand it of `sim render` too.
    .option('--robot <name|file>', 'robot: a name under configs/robots/ or a YAML/JSON file (required)')
    .option(
      '--scene <name|file>',
      'simulated workcell: a name under configs/scenes/ or a YAML file, laid out for --robot',
    )
    .option(
      '--camera-rate <hz>',
      "frames per second of every scene camera (0.1–60; default: each camera's rate_hz; 0 = no frames)",
    )
    .option('--id <id>', 'robot id on the link (default: the robot name)')
    .option(
      '--broker <url>',
      'MQTT broker URL, credentials in the URL (default $BRAINSTEM_SIM_BROKER, else mqtt://127.0.0.1:1883)',
    )
    .option('--ws <url>', 'daemon WebSocket URL, e.g. ws://127.0.0.1:7777/controller')
    .option('--token <token>', 'API token for --ws (default: $BRAINSTEM_TOKEN)')
    .option('--ca <file>', 'PEM CA of an mqtts:// broker (default: the system CAs)')
    .option('--cert <file>', 'PEM client certificate for an mqtts:// broker (with --key)')
    .option('--key <file>', 'PEM private key of --cert')
    .option('--base <topic>', 'MQTT topic base', DEFAULT_BASE)
    .option('--mqtt <version>', 'MQTT protocol: auto (5, else 3.1.1), 3.1.1 or 5', 'auto')
    .option('--rate <hz>', 'state messages per second (1–1000)', '100')
    .option('--lag <s>', 'first-order lag time constant of the joints (0–5)', '0.05')
    .option('--latency <s>', 'actuation latency (0–5)', '0.01')
    .option('--decel <rad/s2>', 'largest joint deceleration when stopping', '3')
    .option('--heartbeat-timeout <s>', 'longest daemon heartbeat silence before stopping', '0.5')
    .option(
      '--stall-after <s>',
      'a tick this late is a stall: the arms hold and their commands are aborted (default: the heartbeat timeout)',
    )
    .option('--tracking-limit <rad>', 'abort and latch a fault above this tracking error (default: off)')
    .option(
      '--fault <spec>',
      'inject a fault, repeatable: disconnect|stall|tracking|drop|delay|late[,key=value...]',
      (v: string, acc: string[]) => [...acc, v],
      [],
    )
    .option('--seed <n>', "seed for random faults and the scene's pose noise", '1')
    .option('--exit-on-stdin-close', 'stop when stdin closes (a parent process that started the sim has gone)')
    .action(async (flags: SimFlags, cmd: Command) => {
      // As commander reports a missing required option: exit 1 with the usage.
      if (flags.robot === undefined) cmd.error("error: required option '--robot <name|file>' not specified");
      const stop = stopSignal(flags.exitOnStdinClose === true);
      if (flags.broker && flags.ws) throw new CliError('give --broker or --ws, not both', 2);
      let setup;
      let faults: Fault[];
      try {
        setup = loadSimSetup(flags.robot);
        faults = flags.fault.map(parseFault);
      } catch (err) {
        throw new CliError((err as Error).message, 2);
      }
      const robot = simRobotFrom(setup);
      const id = flags.id ?? robot.name;
      if (!new RegExp(ROBOT_ID_PATTERN).test(id))
        throw new CliError(`--id must match ${ROBOT_ID_PATTERN} (got "${id}")`, 2);
      const baseProblem = checkBase(flags.base);
      if (baseProblem) throw new CliError(`--base: ${baseProblem}`, 2);
      if (!['auto', '3.1.1', '5'].includes(flags.mqtt))
        throw new CliError(`--mqtt must be auto, 3.1.1 or 5 (got "${flags.mqtt}")`, 2);
      const sim = {
        robotId: id,
        version: VERSION,
        rate: num('--rate', flags.rate, 1, 1000),
        lag: num('--lag', flags.lag, 0, 5),
        latency: num('--latency', flags.latency, 0, 5),
        decel: num('--decel', flags.decel, 0.01, 1000),
        heartbeatTimeout: num('--heartbeat-timeout', flags.heartbeatTimeout, 0.01, 60),
        stallAfter: flags.stallAfter === undefined ? null : num('--stall-after', flags.stallAfter, 0.01, 60),
        trackingLimit: flags.trackingLimit === undefined ? null : num('--tracking-limit', flags.trackingLimit, 0, 10),
        seed: num('--seed', flags.seed, 0, 2 ** 32 - 1),
        faults,
      };
      const world =
        flags.scene === undefined ? undefined : new SimWorld(sceneFor(flags.scene, robot.name), setup, sim.seed);
      if (flags.cameraRate !== undefined && world === undefined)
        throw new CliError("--camera-rate needs --scene (the cameras are the scene's)", 2);
      const cameraRate = flags.cameraRate === undefined ? null : cameraRateFlag(flags.cameraRate);
      const cameras = world && cameraRate !== 0 ? cameraHook(world, setup, cameraRate) : undefined;
      const where = flags.ws ?? flags.broker ?? process.env.BRAINSTEM_SIM_BROKER ?? 'mqtt://127.0.0.1:1883';
      if (!flags.ws) brokerUrlCheck(where, flags.broker !== undefined ? '--broker' : '$BRAINSTEM_SIM_BROKER');
      const log = (line: string) => process.stderr.write(`brainstem sim [${id}] ${line}\n`);
      if (!flags.cert !== !flags.key) throw new CliError('give --cert and --key together', 2);
      let tls;
      try {
        tls = readTlsFiles(flags, (k) => `--${k}`);
      } catch (err) {
        throw new CliError((err as Error).message, 2);
      }
      let proc;
      try {
        proc = startSim({
          robot,
          sim,
          world,
          ...(cameras && { cameras }),
          log,
          link: (on) =>
            flags.ws
              ? new ControllerWs(
                  { url: flags.ws, robot: id, token: flags.token ?? process.env.BRAINSTEM_TOKEN ?? null },
                  on,
                )
              : new ControllerMqtt(
                  {
                    url: where,
                    base: flags.base,
                    robot: id,
                    version: flags.mqtt as MqttVersion,
                    clientId: simClientId(where, id),
                    tls,
                  },
                  on,
                ),
        });
      } catch (err) {
        throw new CliError(`cannot start: ${(err as Error).message}`, 2);
      }
      log(
        `robot ${robot.name}: ${robot.arms.map((a) => `${a.name} (${a.joints.length} joints${a.gripper ? ', gripper' : ''})`).join(', ')}; ${redactUrl(where)}; state ${sim.rate} Hz`,
      );
      if (world)
        log(
          `scene ${world.scene.name} (seed ${sim.seed}): ${world.objects.map((o) => o.name).join(', ') || 'no objects'}; cameras ${world.scene.cameras.map((c) => c.name).join(', ') || 'none'}${cameras ? ` at ${cameraRate ?? 'their own rates in'} Hz` : ' (no frames)'}`,
        );
      await stop;
      log('stopping');
      // Bounded: a broker that never answers must not hold the exit (the parent waits on it).
      const closed = await Promise.race([proc.close().then(() => true), sleep(CLOSE_WAIT_MS, false, { ref: false })]);
      if (!closed) log(`link did not close within ${CLOSE_WAIT_MS} ms; exiting anyway`);
      // Stdin (resumed to watch for the parent) and any leftover socket would keep the process alive.
      process.exit(0);
    });
};

/** The scene `nameOrPath`, which must be laid out for robot `robot`; a usage error (exit 2) otherwise. */
function sceneFor(nameOrPath: string, robot: string) {
  const s = loadScene(nameOrPath);
  if (!s.ok) throw new CliError(`--scene: ${s.issues.map((i) => formatIssue(i)).join('; ')}`, 2);
  if (s.value.robot !== robot)
    throw new CliError(
      `--scene ${nameOrPath} is laid out for robot "${s.value.robot}", not "${robot}" (--robot): run it with --robot ${s.value.robot}`,
      2,
    );
  return s.value;
}

/** Resolves on SIGINT or SIGTERM, or when stdin closes if asked; installed before anything else can run. */
function stopSignal(onStdinClose: boolean): Promise<void> {
  return new Promise<void>((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
    if (onStdinClose) {
      process.stdin.once('end', resolve);
      process.stdin.once('close', resolve);
      process.stdin.resume();
    }
  });
}

/** --camera-rate: 0 (no frames) or 0.1–60 Hz. */
function cameraRateFlag(value: string): number {
  const n = Number(value);
  return n === 0 && value.trim() !== '' ? 0 : num('--camera-rate', value, 0.1, 60);
}

/** The renderer as the process's frames hook, asked at the fastest camera's rate; none without cameras. */
function cameraHook(world: SimWorld, setup: SetupDescription, rate: number | null) {
  const tick = cameraTickRate(world, rate);
  return tick > 0 ? { frames: workcellFrames(world, setup, rate), rate: tick } : undefined;
}
