// A connection's close hooks and live subscriptions. Each hook can be removed (an unsubscribe
// must not leave its stop function, and what it holds, on the connection until it closes), and
// subscriptions are capped per connection and across the daemon: each one runs a timer.
import { RpcCode, RpcError } from './registry.js';

/** The daemon-wide count of live subscriptions, with the limits from server.* config. */
export class SubscriptionBudget {
  private count = 0;

  constructor(
    /** server.max_subscriptions */
    readonly perConnection: number,
    /** server.max_subscriptions_total */
    readonly total: number,
  ) {}

  get live(): number {
    return this.count;
  }

  /** Takes one slot for a connection that holds `held`; past either limit, the -32600 naming it. */
  take(held: number): void {
    if (held >= this.perConnection)
      throw limitError(
        `this connection already holds ${held} live subscriptions, the limit (server.max_subscriptions); unsubscribe one first`,
        'max_subscriptions',
        this.perConnection,
        held + 1,
      );
    if (this.count >= this.total)
      throw limitError(
        `the daemon already serves ${this.count} live subscriptions across connections, the limit (server.max_subscriptions_total)`,
        'max_subscriptions_total',
        this.total,
        this.count + 1,
      );
    this.count++;
  }

  give(): void {
    this.count--;
  }
}

function limitError(message: string, rule: string, limit: number, value: number): RpcError {
  return new RpcError(RpcCode.INVALID_REQUEST, `Invalid Request: ${message}`, {
    field: '(subscriptions)',
    rule,
    limit,
    value,
  });
}

export class ConnectionHooks {
  private readonly hooks = new Set<() => void>();
  private subscriptions = 0;

  constructor(private readonly budget: SubscriptionBudget) {}

  /** Close hooks not yet run nor removed. */
  get size(): number {
    return this.hooks.size;
  }

  /** Runs `fn` once at close unless the returned function removes it first. */
  add(fn: () => void): () => void {
    // A wrapper of its own: the same function added twice is two hooks, removed one by one.
    const hook = () => fn();
    this.hooks.add(hook);
    return () => {
      this.hooks.delete(hook);
    };
  }

  /** A live subscription that `stop` ends at close; the returned end() frees its slot and hook. */
  subscribe(stop: () => void): () => void {
    this.budget.take(this.subscriptions);
    this.subscriptions++;
    let live = true;
    const end = () => {
      if (!live) return;
      live = false;
      this.subscriptions--;
      this.budget.give();
      remove();
    };
    const remove = this.add(() => {
      end();
      stop();
    });
    return end;
  }

  /** Runs and forgets every hook; `failed` hears what one throws (the rest still run). */
  close(failed: (err: unknown) => void): void {
    const all = [...this.hooks];
    this.hooks.clear();
    for (const fn of all) {
      try {
        fn();
      } catch (err) {
        failed(err);
      }
    }
  }
}
