// The simulator as a process: wires a SimController to a controller link (MQTT or WebSocket)
// on the real clock. On every (re)connection it publishes availability `online` and its
// description; it ticks at the state rate and publishes what the controller emits; a
// `disconnect` fault cuts the link without a goodbye and restores it when the fault ends. With a
// workcell it also publishes the ground truth (`sim/scene`) on every change, at most SCENE_HZ,
// and unchanged every SCENE_KEEPALIVE_S.
// Camera frames come from a `frames` hook (the renderer), asked `cameraRate` times a second.
import { randomUUID } from 'node:crypto';
import { SimController, type SimOptions } from './controller.js';
import type { SimRobot } from './robot.js';
import type { SimWorld } from './scene/world.js';
import type { ControllerLink, ControllerLinkHandlers } from '../link/controller-link.js';
import type { FrameMeta } from '../link/camera-protocol.js';

/** One encoded image for a camera stream; the process numbers it (`seq`) and stamps `time`. */
export interface SimFrame {
  camera: string;
  image: Buffer;
  meta: Omit<FrameMeta, 'seq' | 'time'>;
}

/** Renders the frames of this instant (controller clock `now`) from the controller's state. */
export type FramesHook = (now: number, controller: SimController) => SimFrame[] | Promise<SimFrame[]>;

export interface SimProcessOptions {
  robot: SimRobot;
  sim: Partial<SimOptions> & Pick<SimOptions, 'version'>;
  /** The workcell (objects, grasps, collisions) the arms act in; none = joints only. */
  world?: SimWorld;
  /** Builds the link with the handlers the simulator needs. */
  link: (on: ControllerLinkHandlers) => ControllerLink;
  /** Controller clock in seconds (monotonic). */
  clock?: () => number;
  log?: (line: string) => void;
  /** Camera frames to send, with the rate (Hz, > 0) to ask for them; a slow hook skips ticks. */
  cameras?: { frames: FramesHook; rate: number };
}

export interface SimProcess {
  readonly controller: SimController;
  readonly link: ControllerLink;
  close(): Promise<void>;
}

/** Most `sim/scene` messages per second. */
export const SCENE_HZ = 2;
/** Longest gap between `sim/scene` messages: a daemon's scene check waits for one sampled after the robot's last state. */
export const SCENE_KEEPALIVE_S = 1;

/** When the ground truth goes out: on a change at most SCENE_HZ times a second, unchanged every SCENE_KEEPALIVE_S, at once after reset(). */
export class SceneThrottle {
  private sent = { version: -1, at: -Infinity };

  /** A new connection: the next due() is true. */
  reset(): void {
    this.sent = { version: -1, at: -Infinity };
  }

  /** Whether to publish now (time s) the truth at `version`; true marks it sent. */
  due(now: number, version: number): boolean {
    const wait = version === this.sent.version ? SCENE_KEEPALIVE_S : 1 / SCENE_HZ;
    if (now - this.sent.at < wait) return false;
    this.sent = { version, at: now };
    return true;
  }
}

/** Monotonic seconds on an epoch-like scale. */
export function monotonicSeconds(): number {
  return (performance.timeOrigin + performance.now()) / 1000;
}

export function startSim(opts: SimProcessOptions): SimProcess {
  const clock = opts.clock ?? monotonicSeconds;
  const log = opts.log ?? (() => undefined);
  const world = opts.world ?? null;
  const controller = new SimController(opts.robot, { session: randomUUID(), ...opts.sim }, clock(), world);
  let lastDown = '';
  const scene = new SceneThrottle();
  const flush = (now: number) => {
    for (const m of controller.drain(now)) link.send(m.type, m.payload);
    if (world && link.connected && scene.due(now, world.version)) link.sendScene(world.truth());
  };
  const link: ControllerLink = opts.link({
    up() {
      lastDown = '';
      log('connected');
      link.send('availability', 'online');
      link.send('description', controller.description(clock()));
      scene.reset();
      flush(clock());
    },
    message(type, payload) {
      const now = clock();
      controller.receive(now, type, payload);
      flush(now);
    },
    down(reason) {
      if (reason !== lastDown) log(`link down: ${reason}`);
      lastDown = reason;
    },
  });
  let dropped = false;
  const period = Math.max(1, 1000 / controller.options.rate);
  const timer = setInterval(() => {
    const now = clock();
    const up = controller.linkUp(now);
    if (!up && !dropped) {
      log('fault: disconnect');
      link.drop();
      dropped = true;
    } else if (up && dropped) {
      log('fault over: reconnecting');
      link.reconnect();
      dropped = false;
    }
    controller.tick(now);
    flush(now);
  }, period);
  const cameraTimer = opts.cameras ? cameraLoop(opts.cameras, controller, link, clock, log) : undefined;
  return {
    controller,
    link,
    async close() {
      clearInterval(timer);
      clearInterval(cameraTimer);
      await link.close();
    },
  };
}

/** Asks the hook for frames at its rate while the link is up; one request at a time. */
function cameraLoop(
  cameras: NonNullable<SimProcessOptions['cameras']>,
  controller: SimController,
  link: ControllerLink,
  clock: () => number,
  log: (line: string) => void,
): NodeJS.Timeout {
  const seq = new Map<string, number>();
  let busy = false;
  const send = (frames: SimFrame[], time: number) => {
    for (const f of frames) {
      const key = `${f.camera}/${f.meta.kind ?? 'color'}`;
      const n = seq.get(key) ?? 0;
      if (link.sendFrame(f.camera, f.image, { ...f.meta, seq: n, time })) seq.set(key, n + 1);
    }
  };
  return setInterval(
    () => {
      if (busy || !link.connected) return;
      busy = true;
      const now = clock();
      Promise.resolve()
        .then(() => cameras.frames(now, controller))
        .then((frames) => send(frames, now))
        .catch((err: Error) => log(`camera frames failed: ${err.message}`))
        .finally(() => {
          busy = false;
        });
    },
    Math.max(1, 1000 / cameras.rate),
  );
}
