// The daemon: starts its services in order, stops them in reverse (every one of them, even
// when some fail, hang or outlive a deadline), reports aggregate health, and turns SIGINT/SIGTERM
// into a clean stop (a second signal exits at once).
import type { Logger } from './log.js';
import type { Service, ServiceHealth } from './service.js';

export type DaemonState = 'idle' | 'starting' | 'running' | 'stopping' | 'stopped' | 'failed';

export interface DaemonHealth {
  /** `ready` when running and every service is ready; `degraded` when running with a degraded service. */
  status: 'starting' | 'ready' | 'degraded' | 'stopping' | 'stopped' | 'failed';
  ready: boolean;
  services: Record<string, ServiceHealth>;
}

export interface StopResult {
  ok: boolean;
  errors: { service: string; message: string }[];
}

/** How long a shutdown may wait: a hung service must not keep the others running. */
export interface StopDeadlines {
  /** Per service unless it sets its own `stopTimeoutMs` (default 10 s). */
  serviceMs?: number;
  /** The whole shutdown (default 30 s); services left when it passes are not waited for. */
  totalMs?: number;
  now?: () => number;
}

export const DEFAULT_SERVICE_STOP_MS = 10_000;
export const DEFAULT_TOTAL_STOP_MS = 30_000;

export class Daemon {
  private state: DaemonState = 'idle';
  private stopping?: Promise<StopResult>;

  constructor(
    readonly services: readonly Service[],
    private readonly log: Logger,
    private readonly deadlines: StopDeadlines = {},
  ) {}

  get currentState(): DaemonState {
    return this.state;
  }

  /** Starts services in order; on the first failure stops the ones already started and rethrows. */
  async start(): Promise<void> {
    if (this.state !== 'idle') throw new Error(`daemon cannot start from state ${this.state}`);
    this.state = 'starting';
    for (const s of this.services) {
      if (this.stopping) return; // a signal arrived while starting: stop() owns the rest
      try {
        this.log.debug({ service: s.name }, 'starting service');
        await s.start();
      } catch (err) {
        this.log.error({ service: s.name, err: (err as Error).message }, 'service failed to start');
        await this.stop();
        this.state = 'failed';
        throw new Error(`${s.name}: ${(err as Error).message}`, { cause: err });
      }
    }
    if (this.stopping) return;
    this.state = 'running';
    this.log.info({ services: this.services.map((s) => s.name) }, 'daemon ready');
  }

  /** Stops every service in reverse order, collecting failures instead of giving up. */
  stop(): Promise<StopResult> {
    this.stopping ??= this.stopAll();
    return this.stopping;
  }

  private async stopAll(): Promise<StopResult> {
    this.state = 'stopping';
    const errors: StopResult['errors'] = [];
    const now = this.deadlines.now ?? Date.now;
    const end = now() + (this.deadlines.totalMs ?? DEFAULT_TOTAL_STOP_MS);
    for (const s of [...this.services].reverse()) {
      const own = s.stopTimeoutMs ?? this.deadlines.serviceMs ?? DEFAULT_SERVICE_STOP_MS;
      const ms = Math.max(0, Math.min(own, end - now()));
      try {
        if (!(await finishesWithin(s.stop(), ms))) {
          const message = `did not stop within ${ms} ms (${ms < own ? 'shutdown deadline' : 'service deadline'}); left behind`;
          errors.push({ service: s.name, message });
          this.log.error({ service: s.name, timeout_ms: ms }, `service ${message}`);
        }
      } catch (err) {
        errors.push({ service: s.name, message: (err as Error).message });
        this.log.error({ service: s.name, err: (err as Error).message }, 'service failed to stop');
      }
    }
    this.state = 'stopped';
    this.log.info({ ok: errors.length === 0 }, 'daemon stopped');
    return { ok: errors.length === 0, errors };
  }

  health(): DaemonHealth {
    const services = Object.fromEntries(this.services.map((s) => [s.name, s.health()]));
    const statuses = Object.values(services).map((h) => h.status);
    let status: DaemonHealth['status'];
    if (this.state === 'running') {
      if (statuses.some((s) => s !== 'ready' && s !== 'degraded')) status = 'failed';
      else status = statuses.includes('degraded') ? 'degraded' : 'ready';
    } else status = this.state === 'idle' ? 'starting' : this.state;
    return { status, ready: status === 'ready' || status === 'degraded', services };
  }
}

/** True when `p` settles within `ms` (rejections pass through). The timer stays referenced: the
 * deadline must fire even when nothing else keeps the process alive. */
async function finishesWithin(p: Promise<void>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    return await Promise.race([p.then(() => true as const), late]);
  } finally {
    clearTimeout(timer);
  }
}

export interface SignalSource {
  on(signal: 'SIGINT' | 'SIGTERM', listener: () => void): unknown;
  off(signal: 'SIGINT' | 'SIGTERM', listener: () => void): unknown;
}

/**
 * Resolves with the exit code once a SIGINT/SIGTERM stop finishes: 0 when every service
 * stopped cleanly, 1 otherwise. A second signal calls `forceExit` without waiting: 130 after
 * SIGINT, 143 after SIGTERM (a service manager's repeated SIGTERM must not be ignored).
 */
export function stopOnSignals(
  daemon: Daemon,
  log: Logger,
  proc: SignalSource,
  forceExit: (code: number) => void,
): Promise<number> {
  return new Promise((resolve) => {
    let signalled = false;
    const onSignal = (signal: 'SIGINT' | 'SIGTERM') => () => {
      if (signalled) {
        log.warn(`second ${signal}: exiting without waiting for services`);
        forceExit(signal === 'SIGINT' ? 130 : 143);
        return;
      }
      signalled = true;
      log.info({ signal }, 'stopping (press Ctrl-C again to force)');
      void daemon.stop().then((r) => {
        proc.off('SIGINT', onInt);
        proc.off('SIGTERM', onTerm);
        resolve(r.ok ? 0 : 1);
      });
    };
    const onInt = onSignal('SIGINT');
    const onTerm = onSignal('SIGTERM');
    proc.on('SIGINT', onInt);
    proc.on('SIGTERM', onTerm);
  });
}
