// Shares each event-loop turn among all WebSocket clients: a message or batch slice starts only
// while this turn's budget lasts, the rest wait for later turns, so a flood from many clients
// cannot hold timers (the robot heartbeat) for longer than about one budget's work.
import { performance } from 'node:perf_hooks';

/** JSON-RPC calls started per loop turn across all connections. */
export const CALLS_PER_TURN = 256;
/** Work that arrives later than this into a turn waits for the next one. */
export const TURN_MS = 10;

export class LoopShare {
  private used = 0;
  private since = 0;
  private readonly waiting: { calls: number; resolve: () => void }[] = [];
  private turn?: NodeJS.Immediate;

  constructor(
    private readonly callsPerTurn = CALLS_PER_TURN,
    private readonly turnMs = TURN_MS,
  ) {}

  /** Resolves within this turn while its budget lasts, else in a later turn (first come, first served). */
  take(calls = 1): Promise<void> {
    this.arm();
    if (
      this.waiting.length === 0 &&
      this.used + calls <= this.callsPerTurn &&
      performance.now() - this.since < this.turnMs
    ) {
      this.used += calls;
      return Promise.resolve();
    }
    return new Promise((resolve) => this.waiting.push({ calls, resolve }));
  }

  /** Waiters not yet let through. */
  get pending(): number {
    return this.waiting.length;
  }

  private arm(): void {
    if (this.turn) return;
    this.since = performance.now();
    this.turn = setImmediate(() => this.nextTurn());
  }

  private nextTurn(): void {
    this.turn = undefined;
    const active = this.used > 0;
    this.used = 0;
    const granted: (() => void)[] = [];
    // At least one waiter per turn, however large.
    while (
      this.waiting.length > 0 &&
      (granted.length === 0 || this.used + this.waiting[0]!.calls <= this.callsPerTurn)
    ) {
      const w = this.waiting.shift()!;
      this.used += w.calls;
      granted.push(w.resolve);
    }
    if (active || granted.length > 0) this.arm();
    for (const resolve of granted) resolve();
  }
}
