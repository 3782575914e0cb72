// A model's request queue: one request runs at a time (the engine's threads serve one forward
// pass), at most `capacity` wait behind it in FIFO order, and any more are refused as busy
// rather than piling up. A waiter whose signal aborts leaves the queue at once.

/** The queue is full: the API answers 429 / JSON-RPC "busy". */
export class BusyError extends Error {
  constructor(
    readonly model: string,
    readonly waiting: number,
    readonly capacity: number,
  ) {
    super(
      `model "${model}" is busy: ${waiting} request${waiting === 1 ? '' : 's'} already waiting (queue_size ${capacity}); retry later`,
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
  grant: (release: () => void) => void;
  fail: (err: Error) => void;
}

export class RequestQueue {
  private running = false;
  private readonly waiters: Waiter[] = [];
  private idleListeners: (() => void)[] = [];

  constructor(
    readonly model: string,
    public capacity: number,
  ) {}

  get waiting(): number {
    return this.waiters.length;
  }

  get active(): number {
    return this.running ? 1 : 0;
  }

  get idle(): boolean {
    return !this.running && this.waiters.length === 0;
  }

  /**
   * Resolves with a release function once it is this caller's turn. `force` skips the capacity
   * check (explicit unloads must not be refused). Rejects BusyError when full, CancelledError when
   * `signal` aborts first.
   */
  acquire(signal?: AbortSignal, opts: { force?: boolean } = {}): Promise<() => void> {
    if (signal?.aborted) return Promise.reject(new CancelledError());
    if (!this.running) {
      this.running = true;
      return Promise.resolve(this.releaser());
    }
    if (!opts.force && this.waiters.length >= this.capacity)
      return Promise.reject(new BusyError(this.model, this.waiters.length, this.capacity));
    return new Promise((resolve, reject) => {
      const onAbort = () => {
        const i = this.waiters.indexOf(waiter);
        if (i >= 0) this.waiters.splice(i, 1);
        reject(new CancelledError());
      };
      const waiter: Waiter = {
        grant: (release) => {
          signal?.removeEventListener('abort', onAbort);
          resolve(release);
        },
        fail: reject,
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.waiters.push(waiter);
    });
  }

  /** Calls `fn` the next time the queue becomes idle (at once when it is). */
  whenIdle(fn: () => void): void {
    if (this.idle) fn();
    else this.idleListeners.push(fn);
  }

  /** Refuses every waiter (the daemon is stopping). */
  rejectAll(err: Error): void {
    for (const w of this.waiters.splice(0)) w.fail(err);
  }

  private releaser(): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.waiters.shift();
      if (next) {
        next.grant(this.releaser());
        return;
      }
      this.running = false;
      for (const fn of this.idleListeners.splice(0)) fn();
    };
  }
}
