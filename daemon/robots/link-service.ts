// The robot link: serves the configured robots to their controllers over MQTT (the daemon's
// client: embedded broker or an external one) and over the /controller WebSocket, publishes the
// daemon heartbeat, validates what controllers send and hands it to each robot's session and
// executor, and polls the executors (staleness, deadlines) every POLL_MS.
import { randomBytes } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { Counter, type Registry } from 'prom-client';
import type { WebSocket } from 'ws';
import { ROBOTS_DIR } from '../../robot/description/loader.js';
import {
  daemonTopics,
  mqtt5Properties,
  parseRobotTopic,
  robotFilter,
  robotTopic,
  DELIVERY,
  type HeartbeatMsg,
  type StopMsg,
} from '../../robot/link/protocol.js';
import type { MessageBySuffix } from '../../robot/link/protocol-validate.js';
import { cameraFilter, MAX_BINARY_HEADER } from '../../robot/link/camera-protocol.js';
import { simSceneTopic } from '../../robot/link/sim-scene.js';
import { idSource, type Command, type CommandSink, type Planner } from '../../robot/tools/executor.js';
import { PlanThread } from '../../robot/tools/plan-thread.js';
import type { Logger } from '../log.js';
import type { DaemonMqttClient, MqttMessageHandler } from '../mqtt/client.js';
import { maxPacketBytes } from '../mqtt/broker.js';
import { Service } from '../service.js';
import { CameraStore } from './camera-store.js';
import type { RobotsConfig } from './config.js';
import { RobotRuntime, type ControllerMessage } from './runtime.js';
import { WsControllers } from './ws-controllers.js';
import { CONTROLLER_TOPICS, MqttInbound } from './mqtt-inbound.js';

/** Executor poll period: staleness is noticed within stale_ms + this. */
const POLL_MS = 20;
/** The stop reason at shutdown, and how long the link waits for those stops to be confirmed. */
const SHUTDOWN_REASON = 'daemon_stop';
const SHUTDOWN_STOP_WAIT_MS = 2000;

export interface RobotLinkDeps {
  config: RobotsConfig;
  base: string;
  mqtt: DaemonMqttClient;
  log: Logger;
  /** Daemon clock in seconds (monotonic). */
  now?: () => number;
  /** Prometheus registry for the camera frame counter. */
  metrics?: Registry;
}

export class RobotLink extends Service {
  readonly name = 'robots';
  readonly robots = new Map<string, RobotRuntime>();
  /** A new session per daemon run: controllers tell a restarted daemon by it. */
  readonly session = `d-${randomBytes(4).toString('hex')}`;
  readonly now: () => number;
  private readonly ws: WsControllers;
  private readonly plans = new PlanThread();
  private readonly dir: string;
  private timers: NodeJS.Timeout[] = [];
  private hbSeq = 0;
  private readonly invalidLogged = new Set<string>();
  /** Per robot, the stop that could not go out while the MQTT link was down: sent first on reconnection. */
  private readonly pendingStops = new Map<string, StopMsg>();
  private readonly onMqtt: MqttMessageHandler;
  /** Sees every command sent to a controller (the policy service records an episode's). */
  commandObserver: ((robot: string, c: Command) => void) | null = null;

  constructor(private readonly deps: RobotLinkDeps) {
    super();
    this.now = deps.now ?? (() => performance.now() / 1000);
    this.dir = deps.config.configs_dir || ROBOTS_DIR;
    const dir = this.dir;
    const c = deps.config.cameras;
    const limits = {
      maxFrameBytes: c.max_frame_bytes,
      ringFrames: c.ring_frames,
      ringBytes: c.ring_bytes,
      maxStreams: c.max_streams,
    };
    const frames = deps.metrics
      ? new Counter({
          name: 'brainstem_camera_frames_total',
          help: 'Camera frames received, by robot, camera and outcome (ok or the drop reason)',
          labelNames: ['robot', 'camera', 'outcome'] as const,
          registers: [deps.metrics],
        })
      : undefined;
    const ids = idSource(this.session.slice(2));
    for (const entry of deps.config.serve) {
      const sink: CommandSink = (c, expiresIn) => {
        const why = this.send(entry.id, entry.transport, c, expiresIn);
        if (why === null && c.type === 'trajectory')
          this.robots.get(entry.id)!.plans.set(c.msg.arm, { msg: c.msg, at: this.now() });
        return why;
      };
      // The worker plans with this runtime's model, compiled once at start-up (never re-read).
      const planner: Planner = (start, targets, grasped) => {
        const r = this.robots.get(entry.id)!;
        return this.plans.plan(entry.id, r.model.setup, start, targets, grasped, r.sceneSnapshot());
      };
      this.robots.set(
        entry.id,
        new RobotRuntime(
          entry,
          deps.config,
          dir,
          this.now,
          ids,
          sink,
          planner,
          new CameraStore(entry.id, limits, deps.log, (camera, outcome) =>
            frames?.inc({ robot: entry.id, camera, outcome }),
          ),
        ),
      );
    }
    this.onMqtt = new MqttInbound({
      base: deps.base,
      robot: (id) => (this.robots.get(id)?.entry.transport === 'mqtt' ? this.robots.get(id) : undefined),
      now: this.now,
      invalid: (robot, suffix, message) => this.invalid(robot, suffix, message),
      deliver: (robot, kind, value, via) => this.deliver(robot, kind, value, via),
    }).handle;
    // A trajectory or gripper command left unacknowledged by a lost link is never resent: the
    // motion it belonged to was abandoned, and mqtt.js would resend it before the stop.
    deps.mqtt.dropOnDisconnect((topic) => {
      const suffix = parseRobotTopic(deps.base, topic)?.suffix;
      return suffix === 'trajectory' || suffix === 'gripper';
    });
    this.ws = new WsControllers(
      {
        accepts: (robot) => this.robots.get(robot)?.entry.transport === 'ws',
        message: (robot, type, payload) => this.deliver(robot, type, payload, 'in an envelope'),
        scene: (robot, payload) => this.robots.get(robot)!.onSimScene(payload, this.now()),
        closed: (robot) => this.robots.get(robot)!.session.onAvailability('offline', this.now()),
        frame: (robot, f) =>
          this.robots.get(robot)!.cameras.accept(f.camera, f.meta.kind ?? 'color', f.meta, f.image, this.now()),
        dropped: (robot, problem) => this.robots.get(robot)!.cameras.drop(null, 'color', problem, this.now()),
        invalid: (robot, message) => this.invalid(robot, 'envelope', message),
      },
      deps.log,
    );
  }

  /** The largest WebSocket message a controller may send: a camera frame with its header. */
  get controllerMaxPayload(): number {
    return this.deps.config.cameras.max_frame_bytes + MAX_BINARY_HEADER + 4;
  }

  /**
   * The embedded broker closed `robot`'s connection at a packet of `declared` bytes (its camera
   * stream is unknown from the header alone): a drop for the robot, as over WebSocket.
   */
  oversizeOverMqtt(robot: string, declared: number): void {
    const r = this.robots.get(robot);
    if (r?.entry.transport !== 'mqtt') return;
    const limit = maxPacketBytes(this.deps.config.cameras.max_frame_bytes);
    const detail = `an MQTT packet of ${declared} bytes (more than the broker's ${limit}: the larger of robots.cameras.max_frame_bytes and a trajectory's 8 MiB, + 64 KiB): the broker closed the connection`;
    r.cameras.drop(null, 'color', { code: 'oversize', detail }, this.now());
  }

  /** The API server's handler for `/controller` sockets. */
  acceptController = (ws: WebSocket, req: IncomingMessage): void => this.ws.attach(ws, req.socket.remoteAddress);

  robot(id: string): RobotRuntime | undefined {
    return this.robots.get(id);
  }

  protected override describe() {
    const now = this.now();
    const detail = Object.fromEntries([...this.robots].map(([id, r]) => [id, r.session.problem(now)?.code ?? 'ready']));
    return { detail: { robots: detail } };
  }

  protected async onStart(): Promise<void> {
    const { mqtt, base, config } = this.deps;
    const mqttRobots = [...this.robots.values()].filter((r) => r.entry.transport === 'mqtt');
    if (mqttRobots.length) {
      const filters = Object.fromEntries(CONTROLLER_TOPICS.map((t) => [robotFilter(base, t), DELIVERY[t].qos]));
      filters[simSceneTopic(base, '+')] = 0;
      mqtt.subscribe({ ...filters, [cameraFilter(base)]: 0 }, this.onMqtt);
      mqtt.onConnection(this.onMqttConnection);
      if (!mqtt.connected) this.onMqttConnection(false);
    }
    // Compiling the planner takes a while on first use: done in the background, ahead of calls.
    for (const r of this.robots.values()) void this.plans.warmUp(r.id, r.model.setup);
    this.timers = [
      setInterval(() => this.heartbeat(), config.heartbeat.period_ms),
      setInterval(() => this.poll(), POLL_MS),
    ];
    this.heartbeat();
    this.deps.log.info(
      {
        robots: [...this.robots.values()].map((r) => `${r.id} (${r.entry.robot}, ${r.entry.transport})`),
        session: this.session,
      },
      'robot link ready',
    );
  }

  protected async onStop(): Promise<void> {
    await this.stopMotions();
    // The same handlers are added again by a later start: a message is handled once.
    this.deps.mqtt.offMessage(this.onMqtt);
    this.deps.mqtt.offConnection(this.onMqttConnection);
    for (const t of this.timers) clearInterval(t);
    this.timers = [];
    this.ws.close();
    await this.plans.close();
  }

  /**
   * Stops every robot with busy arms (motions of RPC calls too; episodes were stopped before)
   * and waits a bounded time for the stops to be confirmed; whatever still waits then is ended,
   * so no call outlives the link.
   */
  private async stopMotions(): Promise<void> {
    const busy = [...this.robots.values()].filter((r) => r.executor.busyArms().length > 0);
    if (busy.length === 0) return;
    const stops = busy.map((r) => r.executor.stop(SHUTDOWN_REASON));
    let timer: NodeJS.Timeout | undefined;
    const bound = new Promise<void>((resolve) => (timer = setTimeout(resolve, SHUTDOWN_STOP_WAIT_MS)));
    await Promise.race([Promise.all(stops), bound]);
    clearTimeout(timer);
    const now = this.now();
    for (const r of busy) r.executor.lost(SHUTDOWN_REASON, 'the daemon is stopping', now);
  }

  private heartbeat(): void {
    const { config, mqtt, base } = this.deps;
    const msg: HeartbeatMsg = {
      v: 1,
      session: this.session,
      seq: this.hbSeq++,
      time: this.now(),
      period: config.heartbeat.period_ms / 1000,
      timeout: config.heartbeat.timeout_ms / 1000,
    };
    if (mqtt.connected)
      mqtt.publish(daemonTopics(base).heartbeat, JSON.stringify(msg), { qos: 0, retain: false }).catch(() => undefined);
    this.ws.heartbeat(msg);
  }

  private poll(): void {
    const now = this.now();
    for (const r of this.robots.values()) r.executor.poll(now);
  }

  private readonly onMqttConnection = (up: boolean): void => {
    if (up)
      for (const [robot, msg] of this.pendingStops) {
        this.pendingStops.delete(robot);
        this.send(robot, 'mqtt', { type: 'stop', msg }, null);
      }
    const now = this.now();
    for (const r of this.robots.values()) if (r.entry.transport === 'mqtt') r.session.setTransportUp(up, now);
  };

  /** Hands a valid message to its robot; a description naming another robot is invalid. */
  private deliver(
    robot: string,
    kind: ControllerMessage,
    value: MessageBySuffix[ControllerMessage],
    via: 'on the topic' | 'in an envelope',
  ): void {
    const named = kind === 'description' ? (value as { robot: string }).robot : robot;
    if (named !== robot)
      return this.invalid(robot, kind, `description.robot is "${named}" but it came ${via} of robot ${robot}`);
    this.robots.get(robot)!.receive(kind, value, this.now());
  }

  /** Invalid controller messages are counted and logged once per robot and topic. */
  private invalid(robot: string, suffix: string, message: string): void {
    const r = this.robots.get(robot)!;
    r.session.invalid++;
    r.session.lastInvalid = message;
    const key = `${robot}/${suffix}`;
    if (this.invalidLogged.has(key)) return;
    this.invalidLogged.add(key);
    this.deps.log.warn({ robot, topic: suffix, err: message }, 'invalid message from a controller: ignored');
  }

  private send(robot: string, transport: 'mqtt' | 'ws', c: Command, expiresIn: number | null): string | null {
    const why = this.publish(robot, transport, c, expiresIn);
    // The observer (an episode's record) runs once the command is out: a failing one (a full
    // disk) must never hold back a command, least of all a stop.
    if (why === null && this.commandObserver) {
      try {
        this.commandObserver(robot, c);
      } catch (err) {
        this.deps.log.warn({ robot, command: c.type, err: (err as Error).message }, 'command observer failed');
      }
    }
    return why;
  }

  private publish(robot: string, transport: 'mqtt' | 'ws', c: Command, expiresIn: number | null): string | null {
    if (transport === 'ws') return this.ws.send(robot, c.type, c.msg);
    const { mqtt, base } = this.deps;
    if (!mqtt.connected) {
      // The arms may still follow what was sent before the link went down: the stop is kept
      // (one per robot, every arm when two differ) for the reconnection.
      const prior = c.type === 'stop' ? this.pendingStops.get(robot) : undefined;
      if (c.type === 'stop')
        this.pendingStops.set(robot, prior && prior.arm !== c.msg.arm ? { ...c.msg, arm: null } : c.msg);
      return 'the daemon is not connected to the MQTT broker';
    }
    const v5 = mqtt.protocol === '5' ? { properties: mqtt5Properties(c.msg.id, expiresIn ?? undefined) } : {};
    mqtt
      .publish(robotTopic(base, robot, c.type), JSON.stringify(c.msg), { ...DELIVERY[c.type], ...v5 })
      .catch((err: Error) =>
        this.deps.log.warn({ robot, command: c.type, id: c.msg.id, err: err.message }, 'could not publish a command'),
      );
    return null;
  }
}
