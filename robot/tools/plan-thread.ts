// The daemon side of the planning worker (plan-worker.ts): one worker thread for all robots,
// started lazily, requests answered in order. A worker that dies fails what it had in hand and
// is started again on the next request. The worker plans with the setup the daemon compiled at
// start-up (sent with a robot's first request to each worker), never re-reading config files:
// stop plans, FK, settling and the controller check use that same setup.
import { Worker } from 'node:worker_threads';
import type { SetupDescription } from '../description/types.js';
import type { PlanResult } from './plan.js';
import type { SceneSnapshot } from './plan-scene.js';
import type { ArmTargets } from './validate.js';

export interface PlanRequest {
  id: number;
  robot: string;
  /** The robot's setup (plain data), on its first request to this worker; later ones name it only. */
  setup?: SetupDescription;
  start: Record<string, readonly number[]>;
  targets: ArmTargets[];
  /** Arms holding a grasped object (Planner.setGrasped). */
  grasped: string[];
  /** A simulated workcell's ground truth to check against. */
  scene?: SceneSnapshot;
  warmUp?: boolean;
}

export interface PlanReply {
  id: number;
  result: PlanResult;
}

export class PlanThread {
  private worker: Worker | null = null;
  private next = 1;
  private readonly pending = new Map<number, (r: PlanResult) => void>();
  /** Robots whose setup the current worker has (cleared with a new worker). */
  private sent = new Set<string>();

  /** Plans for `robot` (a served robot's id) with its compiled `setup`. Never rejects: failures are result codes. */
  plan(
    robot: string,
    setup: SetupDescription,
    start: Record<string, readonly number[]>,
    targets: ArmTargets[],
    grasped: string[] = [],
    scene?: SceneSnapshot,
  ): Promise<PlanResult> {
    return this.request(setup, { robot, start, targets, grasped, ...(scene && { scene }) });
  }

  /** Compiles the robot's model and the planner in the worker before the first call needs them. */
  async warmUp(robot: string, setup: SetupDescription): Promise<void> {
    await this.request(setup, { robot, start: {}, targets: [], grasped: [], warmUp: true });
  }

  async close(): Promise<void> {
    const w = this.worker;
    this.worker = null;
    if (w) await w.terminate();
    this.failAll('the planner stopped');
  }

  private request(setup: SetupDescription, r: Omit<PlanRequest, 'id' | 'setup'>): Promise<PlanResult> {
    const id = this.next++;
    return new Promise((resolve) => {
      this.pending.set(id, resolve);
      const w = this.ensure();
      // Requests reach the worker in order, so the first one carrying the setup precedes the rest.
      const first = !this.sent.has(r.robot);
      this.sent.add(r.robot);
      w.postMessage({ id, ...r, ...(first && { setup }) } satisfies PlanRequest);
    });
  }

  private ensure(): Worker {
    if (this.worker) return this.worker;
    const w = new Worker(new URL('./plan-worker.js', import.meta.url));
    w.unref();
    this.sent = new Set();
    w.on('message', (m: PlanReply) => {
      this.pending.get(m.id)?.(m.result);
      this.pending.delete(m.id);
    });
    const gone = (why: string) => {
      if (this.worker === w) this.worker = null;
      this.failAll(why);
    };
    w.on('error', (err) => gone(`the planner failed: ${err.message}`));
    w.on('exit', (code) => gone(`the planner exited (code ${code})`));
    this.worker = w;
    return w;
  }

  private failAll(message: string): void {
    for (const resolve of this.pending.values()) resolve({ ok: false, code: 'planner_error', arm: null, message });
    this.pending.clear();
  }
}
