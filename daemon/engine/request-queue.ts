// A model's request queue: one request runs at a time (the engine's threads serve one forward
// pass), at most `capacity` wait behind it and any more are refused as busy rather than piling up.
// Each client (a connection, an episode) may hold at most `perClient` of those places, and turns go
// round-robin between clients (fair-lanes.ts), so one client cannot fill the queue or starve the
// others. A waiter whose signal aborts leaves the queue at once.
import { FairLanes } from './fair-lanes.js';

/** The queue, or this client's share of it, is full: the API answers 429 / JSON-RPC "busy". */
export class BusyError extends Error {
  /** `waiting` and `capacity` count the whole queue (queue_size) or this client's requests (queue_per_client). */
  constructor(
    readonly model: string,
    readonly waiting: number,
    readonly capacity: number,
    readonly limit: 'queue_size' | 'queue_per_client' = 'queue_size',
  ) {
    const n = `${waiting} request${waiting === 1 ? '' : 's'}`;
    super(
      limit === 'queue_size'
        ? `model "${model}" is busy: ${n} already waiting (queue_size ${capacity}); retry later`
        : `model "${model}" is busy for this client: it already has ${n} waiting (queue_per_client ${capacity}); retry later`,
    );
    this.name = 'BusyError';
  }
}

/** The caller gave up (client gone, cancelled) while waiting or running. */
export class CancelledError extends Error {
  constructor(message = 'the request was cancelled') {
    super(message);
    this.name = 'CancelledError';
  }
}

interface Waiter {
  client?: string;
  grant: (release: () => void) => void;
  fail: (err: Error) => void;
}

export class RequestQueue {
  private running = false;
  private readonly waiters = new FairLanes<Waiter>();
  private idleListeners: (() => void)[] = [];

  /** `perClient` defaults to `capacity` (no limit per client). */
  constructor(
    readonly model: string,
    public capacity: number,
    public perClient = capacity,
  ) {}

  get waiting(): number {
    return this.waiters.size;
  }

  get active(): number {
    return this.running ? 1 : 0;
  }

  get idle(): boolean {
    return !this.running && this.waiters.size === 0;
  }

  /**
   * Resolves with a release function once it is this caller's turn. `client` names the caller for
   * its share and the round-robin (absent: one shared anonymous client). `force` skips both limits
   * and waits in strict order behind everything queued (explicit unloads must not be refused).
   * Rejects BusyError when full, CancelledError when `signal` aborts first.
   */
  acquire(signal?: AbortSignal, opts: { force?: boolean; client?: string } = {}): Promise<() => void> {
    if (signal?.aborted) return Promise.reject(new CancelledError());
    const client = opts.client ?? '';
    if (!this.running) {
      this.running = true;
      return Promise.resolve(this.releaser(client));
    }
    if (!opts.force && this.waiters.size >= this.capacity) {
      const refused = this.makeRoom(client);
      if (refused) return Promise.reject(refused);
    }
    return new Promise((resolve, reject) => {
      const onAbort = () => {
        this.waiters.remove(waiter);
        reject(new CancelledError());
      };
      const waiter: Waiter = {
        ...(opts.force ? {} : { client }),
        grant: (release) => {
          signal?.removeEventListener('abort', onAbort);
          resolve(release);
        },
        fail: (err) => {
          signal?.removeEventListener('abort', onAbort);
          reject(err);
        },
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      if (opts.force) this.waiters.pushBarrier(waiter);
      else this.waiters.push(waiter, client);
    });
  }

  /** Calls `fn` the next time the queue becomes idle (at once when it is). */
  whenIdle(fn: () => void): void {
    if (this.idle) fn();
    else this.idleListeners.push(fn);
  }

  /**
   * The queue is full. A client may go past its share while there is room, so one app alone can
   * use the whole queue; a client under its share then takes the place of the newest request of the
   * client furthest over it, which is refused as busy. Returns the caller's refusal, if any.
   */
  private makeRoom(client: string): BusyError | null {
    const own = this.waiters.countOf(client);
    const full = new BusyError(this.model, this.waiters.size, this.capacity);
    // A client alone in the queue finds it full, not its share.
    if (own >= this.perClient)
      return own === this.waiters.size ? full : new BusyError(this.model, own, this.perClient, 'queue_per_client');
    const over = this.waiters.heaviest();
    if (!over || over.count <= this.perClient) return full;
    this.waiters
      .popNewest(over.client)!
      .fail(new BusyError(this.model, over.count, this.perClient, 'queue_per_client'));
    return null;
  }

  /** Refuses every waiter (the daemon is stopping). */
  rejectAll(err: Error): void {
    for (const w of this.waiters.drain()) w.fail(err);
  }

  /** `client` holds the turn this ends: the next turn goes to another client when one waits. */
  private releaser(client?: string): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.waiters.shift(client);
      if (next) {
        next.grant(this.releaser(next.client));
        return;
      }
      this.running = false;
      for (const fn of this.idleListeners.splice(0)) fn();
    };
  }
}
