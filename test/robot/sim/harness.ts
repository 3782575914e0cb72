// Drives a SimController on a simulated clock with a daemon heartbeat, collecting what it publishes.
import assert from 'node:assert/strict';
import { SimController, type Outbound, type SimOptions } from '../../../robot/sim/controller.js';
import type { SimRobot } from '../../../robot/sim/robot.js';
import type { SimWorld } from '../../../robot/sim/scene/world.js';
import type { EventMsg, StateMsg, TrajectoryMsg, TrajectoryPoint } from '../../../robot/link/protocol.js';
import { validateEvent, validateState } from '../../../robot/link/protocol-validate.js';

export const ROBOT: SimRobot = {
  name: 'tbot',
  arms: [
    {
      name: 'left',
      joints: [
        { name: 'l1', lower: -2, upper: 2, velocity: 3, acceleration: 10 },
        { name: 'l2', lower: -2, upper: 2, velocity: 3, acceleration: 10 },
        { name: 'l3', lower: -2, upper: 2, velocity: 3, acceleration: 10 },
      ],
      gripper: { min: 0, max: 0.1, speed: 0.1 },
    },
    { name: 'right', joints: [{ name: 'r1', lower: -1, upper: 1, velocity: 1, acceleration: 10 }] },
  ],
};

export class Harness {
  readonly sim: SimController;
  t = 0;
  out: Outbound[] = [];
  /** Heartbeat period (s); null stops the heartbeat. */
  hbPeriod: number | null = 0.1;
  hbTimeout = 0.3;
  hbSession = 'd1';
  lastHb = -Infinity;
  private hbSeq = 0;
  private ids = 0;

  constructor(opts: Partial<SimOptions> = {}, robot: SimRobot = ROBOT, world: SimWorld | null = null) {
    this.sim = new SimController(robot, { session: 's1', version: 'test', ...opts }, 0, world);
  }

  /** Advances to `until` in steps of dt, heartbeating and collecting (every message is validated). */
  run(until: number, dt = 0.005): void {
    while (this.t < until - 1e-12) {
      this.t = Math.min(until, this.t + dt);
      if (this.hbPeriod !== null && this.t - this.lastHb >= this.hbPeriod - 1e-12) this.heartbeat();
      this.sim.tick(this.t);
      this.collect();
    }
  }

  heartbeat(): void {
    this.lastHb = this.t;
    this.sim.receive(this.t, 'heartbeat', {
      v: 1,
      session: this.hbSession,
      seq: this.hbSeq++,
      time: 1000 + this.t,
      period: this.hbPeriod ?? 0.1,
      timeout: this.hbTimeout,
    });
    this.collect();
  }

  send(type: 'trajectory' | 'gripper' | 'stop' | 'daemon_availability', payload: unknown): void {
    this.sim.receive(this.t, type, payload);
    this.collect();
  }

  /** A linear trajectory for `arm` from its current position through the given offsets. */
  trajectory(
    arm: string,
    joints: string[],
    points: TrajectoryPoint[],
    extra: Partial<TrajectoryMsg> = {},
  ): TrajectoryMsg {
    return {
      v: 1,
      id: `t${this.ids++}`,
      arm,
      joints,
      time: 1000 + this.t,
      start_time: this.t,
      expires_at: this.t + 0.5,
      points,
      ...extra,
    };
  }

  events(id?: string): EventMsg[] {
    return this.out
      .filter((m) => m.type === 'events')
      .map((m) => m.payload as EventMsg)
      .filter((e) => id === undefined || e.id === id);
  }

  eventNames(id: string): string[] {
    return this.events(id).map((e) => (e.reason ? `${e.event}:${e.reason}` : e.event));
  }

  states(): StateMsg[] {
    return this.out.filter((m) => m.type === 'state').map((m) => m.payload as StateMsg);
  }

  lastState(): StateMsg {
    const s = this.states();
    assert.ok(s.length > 0, 'no state published yet');
    return s[s.length - 1]!;
  }

  private collect(): void {
    for (const m of this.sim.drain(this.t)) {
      const v = m.type === 'state' ? validateState(m.payload) : validateEvent(m.payload);
      assert.ok(v.ok, `sim published an invalid ${m.type}: ${v.ok ? '' : v.message}`);
      this.out.push(m);
    }
  }
}
