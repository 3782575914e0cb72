// An executor wired to an in-memory simulated controller on a simulated clock: commands reach
// the sim at once, its messages are validated and handed to the controller session, the daemon
// heartbeats every 0.1 s and polls every 10 ms. Deterministic: no timers, no wall clock.
import { ControllerSession } from '../../../robot/link/controller-session.js';
import type { EventMsg, StateMsg } from '../../../robot/link/protocol.js';
import { validateMessage } from '../../../robot/link/protocol-validate.js';
import { loadArms } from '../../../robot/description/loader.js';
import { SimController, type SimOptions } from '../../../robot/sim/controller.js';
import { simRobotFrom, type SimRobot } from '../../../robot/sim/robot.js';
import type { SimWorld } from '../../../robot/sim/scene/world.js';
import { Executor, idSource, type Command, type ExecutorOptions } from '../../../robot/tools/executor.js';
import { RobotModel } from '../../../robot/tools/robot-model.js';
import type { ToolOutcome } from '../../../robot/tools/outcome.js';

/** Controller clock = daemon clock + this. */
export const OFFSET = 1000;

export class Loopback {
  /** Daemon time (s). */
  t = 0;
  readonly sim: SimController;
  readonly session: ControllerSession;
  readonly exec: Executor;
  readonly model: RobotModel;
  /** What the simulated controller knows of the robot (joint limits included). */
  readonly robotSpec: SimRobot;
  readonly sent: Command[] = [];
  readonly events: EventMsg[] = [];
  states: StateMsg[] = [];
  /** False cuts the daemon → controller direction (commands and heartbeats are lost). */
  downlink = true;
  /** Edits each message of the simulated controller before the daemon side sees it. */
  edit?: (type: string, payload: Record<string, unknown>) => void;
  /** Seconds the daemon spends handing over a command of this many JSON bytes: the clock runs on meanwhile. */
  sendCost?: (bytes: number) => number;
  /** Seconds a command takes to reach the simulated controller (0 or none: at once). */
  delay?: (c: Command) => number;
  private inFlight: { at: number; type: Command['type']; payload: unknown }[] = [];
  private hbSeq = 0;
  private lastHb = -Infinity;

  constructor(
    robot = 'yam',
    sim: Partial<SimOptions> = {},
    exec: Partial<ExecutorOptions> = {},
    /** A workcell for the simulated arms (objects, grasps, collisions). */
    world: SimWorld | null = null,
  ) {
    const r = loadArms(robot);
    if (!r.ok) throw new Error(JSON.stringify(r.issues));
    this.model = new RobotModel(r.value.setup);
    this.robotSpec = simRobotFrom(r.value.setup);
    this.sim = new SimController(
      this.robotSpec,
      { robotId: robot, session: 'sim-1', version: 'test', rate: 100, ...sim },
      OFFSET,
      world,
    );
    this.session = new ControllerSession(robot, this.model.expectedArms(), 0.2);
    this.exec = new Executor({
      robot,
      model: this.model,
      session: this.session,
      now: () => this.t,
      ids: idSource('test'),
      options: exec,
      sink: (c) => {
        this.sent.push(c);
        const text = JSON.stringify(c.msg);
        if (this.sendCost) this.t = Math.round((this.t + this.sendCost(text.length)) * 1e6) / 1e6;
        const d = this.delay?.(c) ?? 0;
        if (this.downlink && d > 0) this.inFlight.push({ at: this.t + d, type: c.type, payload: JSON.parse(text) });
        else if (this.downlink) this.sim.receive(this.t + OFFSET, c.type, JSON.parse(text));
        return null;
      },
    });
    this.session.onAvailability('online', 0);
    this.session.onDescription(this.sim.description(OFFSET), 0);
  }

  /** Advances `dt` seconds in 1 ms steps. */
  async run(dt: number): Promise<void> {
    await this.until(() => false, dt);
  }

  /** Steps until `cond` holds (checked after every step's promises settle) or `max` seconds pass; returns whether it held. */
  async until(cond: () => boolean, max: number): Promise<boolean> {
    const end = this.t + max;
    while (this.t < end - 1e-9) {
      this.t = Math.round((this.t + 0.001) * 1e6) / 1e6;
      if (this.downlink && this.t - this.lastHb >= 0.1 - 1e-9) {
        this.lastHb = this.t;
        this.sim.receive(this.t + OFFSET, 'heartbeat', {
          v: 1,
          session: 'daemon-1',
          seq: this.hbSeq++,
          time: this.t,
          period: 0.1,
          timeout: 0.5,
        });
      }
      for (const m of this.inFlight.filter((x) => x.at <= this.t + 1e-9)) {
        this.inFlight.splice(this.inFlight.indexOf(m), 1);
        this.sim.receive(this.t + OFFSET, m.type, m.payload);
      }
      this.sim.tick(this.t + OFFSET);
      for (const m of this.sim.drain(this.t + OFFSET)) {
        this.edit?.(m.type, m.payload as unknown as Record<string, unknown>);
        const v = validateMessage(m.type, m.payload);
        if (!v.ok) throw new Error(`sim sent an invalid ${m.type}: ${v.message}`);
        if (m.type === 'state') {
          this.states.push(m.payload as StateMsg);
          this.session.onState(m.payload as StateMsg, this.t);
        } else {
          this.events.push(m.payload as EventMsg);
          this.session.onEvent(m.payload as EventMsg, this.t);
        }
      }
      if (Math.round(this.t * 1000) % 10 === 0) this.exec.poll(this.t);
      await Promise.resolve();
      if (cond()) return true;
    }
    return cond();
  }

  /** Executes a call and steps until the controller has started a trajectory; `outcome` comes later. */
  async started(reply: { name: string; arguments: object }): Promise<{ outcome: Promise<ToolOutcome> }> {
    const outcome = this.exec.execute(reply);
    await this.until(() => this.events.some((e) => e.event === 'started'), 2);
    return { outcome };
  }

  /** Runs until the outcome arrives (at most `max` s of simulated time). */
  async outcome(p: Promise<ToolOutcome>, max = 30): Promise<ToolOutcome> {
    let got: ToolOutcome | undefined;
    void p.then((o) => (got = o));
    await this.until(() => got !== undefined, max);
    if (!got) throw new Error(`no outcome within ${max} s of simulated time`);
    return got;
  }

  /** TCP pose of an arm now, shifted by (dx, dy, dz), as a tool pose. */
  poseFromHere(arm: string, dx: number, dy: number, dz: number): { pose_xyzquat: number[] } {
    const q = this.session.latest!.arms[arm]!.q;
    const p = this.model.tcpPose(arm, q);
    return { pose_xyzquat: [p[0]! + dx, p[1]! + dy, p[2]! + dz, p[3]!, p[4]!, p[5]!, p[6]!] };
  }

  trajectories(): Command[] {
    return this.sent.filter((c) => c.type === 'trajectory');
  }
}
