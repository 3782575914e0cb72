// A service: the constructor only stores dependencies; start()/stop() are async and idempotent.
// Transitions are serialised, so stop() during start() waits for start() and then stops.

export type ServiceStatus = 'stopped' | 'starting' | 'ready' | 'degraded' | 'stopping' | 'failed';

export interface ServiceHealth {
  status: ServiceStatus;
  /** Service-specific facts (address, connection state, last error...). */
  detail?: Record<string, unknown>;
}

export abstract class Service {
  abstract readonly name: string;
  /** How long the daemon waits for stop() before moving on; unset: the daemon's default. */
  readonly stopTimeoutMs?: number;
  private state: ServiceStatus = 'stopped';
  private failureReason?: string;
  private queue: Promise<void> = Promise.resolve();

  /** Acquire resources (listen, connect). Must leave nothing running if it throws. */
  protected abstract onStart(): Promise<void>;
  /** Release everything; must work after a failed or partial start. */
  protected abstract onStop(): Promise<void>;
  /** Extra health facts; `degraded` lets a running service report trouble (e.g. a lost broker). */
  protected describe(): { degraded?: string; detail?: Record<string, unknown> } {
    return {};
  }

  get status(): ServiceStatus {
    return this.state;
  }

  start(): Promise<void> {
    return this.enqueue(async () => {
      if (this.state === 'ready') return;
      this.state = 'starting';
      try {
        await this.onStart();
        this.state = 'ready';
        this.failureReason = undefined;
      } catch (err) {
        this.state = 'failed';
        this.failureReason = (err as Error).message;
        await this.onStop().catch(() => undefined);
        throw err;
      }
    });
  }

  stop(): Promise<void> {
    return this.enqueue(async () => {
      if (this.state === 'stopped') return;
      const wasFailed = this.state === 'failed';
      this.state = 'stopping';
      try {
        if (!wasFailed) await this.onStop();
        this.state = 'stopped';
      } catch (err) {
        this.state = 'failed';
        this.failureReason = (err as Error).message;
        throw err;
      }
    });
  }

  health(): ServiceHealth {
    const { degraded, detail } = this.state === 'ready' ? this.describe() : { degraded: undefined, detail: undefined };
    const status = degraded ? 'degraded' : this.state;
    const reason = degraded ?? (this.state === 'failed' ? this.failureReason : undefined);
    const merged = { ...detail, ...(reason ? { reason } : {}) };
    return Object.keys(merged).length > 0 ? { status, detail: merged } : { status };
  }

  private enqueue(step: () => Promise<void>): Promise<void> {
    const run = this.queue.then(step);
    this.queue = run.catch(() => undefined);
    return run;
  }
}
