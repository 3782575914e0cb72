// Shares each event-loop turn among all WebSocket clients: a message or batch slice starts only
// while this turn's budget lasts, the rest wait for later turns, served one per client in turn, so
// a flood cannot hold timers (the robot heartbeat) for much longer than one budget's work and a
// client sending large batches does not delay the others' single calls. The calls let through per
// turn follow the measured length of the loop's iterations: when calls cost more (a slow handler,
// a busy CPU) fewer start per turn, so a turn stays near TURN_MS × 2 whatever a call costs.
import { performance } from 'node:perf_hooks';

/** JSON-RPC calls started per loop turn across all connections. */
export const CALLS_PER_TURN = 256;
/** Work that arrives later than this into a turn waits for the next one. */
export const TURN_MS = 10;

interface Waiter {
  calls: number;
  resolve: () => void;
}

/** Growth of the per-turn budget after an iteration within the target (multiplicative). */
const BUDGET_GROWTH = 1.25;

export class LoopShare {
  private used = 0;
  private since = 0;
  /** Calls let through per turn now: at most callsPerTurn, shrunk while iterations run long. */
  private budget: number;
  /** Start of the previous turn, while turns follow one another (undefined after an idle gap). */
  private lastTurnAt?: number;
  /** Waiting work per client, clients in the order they are next served. */
  private readonly waiting = new Map<object, Waiter[]>();
  private turn?: NodeJS.Immediate;

  constructor(
    private readonly callsPerTurn = CALLS_PER_TURN,
    private readonly turnMs = TURN_MS,
    private readonly now: () => number = () => performance.now(),
  ) {
    this.budget = callsPerTurn;
  }

  /** Calls let through per turn at present. */
  get turnBudget(): number {
    return this.budget;
  }

  /** Resolves within this turn while its budget lasts, else in a later turn. */
  take(client: object, calls = 1): Promise<void> {
    this.arm();
    if (this.waiting.size === 0 && this.used + calls <= this.budget && this.now() - this.since < this.turnMs) {
      this.used += calls;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const queue = this.waiting.get(client);
      if (queue) queue.push({ calls, resolve });
      else this.waiting.set(client, [{ calls, resolve }]);
    });
  }

  /** Waiters not yet let through. */
  get pending(): number {
    let n = 0;
    for (const q of this.waiting.values()) n += q.length;
    return n;
  }

  private arm(): void {
    if (this.turn) return;
    this.since = this.now();
    this.turn = setImmediate(() => this.nextTurn());
  }

  /**
   * Between two chained turns lies exactly one loop iteration (the calls let through, timers, I/O):
   * past twice the turn time the budget shrinks in proportion, within it the budget grows back.
   */
  private adapt(at: number): void {
    if (this.lastTurnAt !== undefined) {
      const iteration = at - this.lastTurnAt;
      const target = 2 * this.turnMs;
      this.budget =
        iteration > target
          ? Math.max(1, Math.floor((this.budget * target) / iteration))
          : Math.min(this.callsPerTurn, Math.ceil(this.budget * BUDGET_GROWTH));
    }
    this.lastTurnAt = at;
  }

  /** Lets the waiters through one per client, round robin, until the budget is spent (at least one). */
  private nextTurn(): void {
    this.turn = undefined;
    this.adapt(this.now());
    const active = this.used > 0;
    this.used = 0;
    const granted: (() => void)[] = [];
    for (const [client, queue] of this.waiting) {
      const w = queue[0]!;
      if (granted.length > 0 && this.used + w.calls > this.budget) break;
      queue.shift();
      this.used += w.calls;
      granted.push(w.resolve);
      // Served: to the back of the line (or out of it).
      this.waiting.delete(client);
      if (queue.length > 0) this.waiting.set(client, queue);
    }
    if (active || granted.length > 0) this.arm();
    else this.lastTurnAt = undefined;
    for (const resolve of granted) resolve();
  }
}
