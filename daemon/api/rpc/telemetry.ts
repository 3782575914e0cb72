// Periodic telemetry for system.subscribe: memory, CPU and event-loop delay since the last sample.
import { freemem, loadavg, totalmem } from 'node:os';
import { monitorEventLoopDelay, performance, type IntervalHistogram } from 'node:perf_hooks';

export interface Telemetry {
  time: string;
  uptime_s: number;
  memory: {
    rss_bytes: number;
    heap_used_bytes: number;
    heap_total_bytes: number;
    external_bytes: number;
    system_total_bytes: number;
    system_free_bytes: number;
  };
  /** process_percent: CPU time over wall time since the previous sample (100 = one core busy). */
  cpu: { process_percent: number; load_avg: number[] };
  /** Event-loop delay since the previous sample, in milliseconds. */
  event_loop: { mean_ms: number; p99_ms: number; max_ms: number };
}

const ms = (ns: number) => (Number.isFinite(ns) ? Math.round(ns / 1e4) / 100 : 0);

/** One per subscription, so each subscriber sees its own intervals. */
export class TelemetrySampler {
  private readonly delay: IntervalHistogram = monitorEventLoopDelay({ resolution: 10 });
  private lastCpu = process.cpuUsage();
  private lastTime = performance.now();

  constructor() {
    this.delay.enable();
  }

  sample(): Telemetry {
    const now = performance.now();
    const cpu = process.cpuUsage(this.lastCpu);
    const wallUs = Math.max(1, (now - this.lastTime) * 1000);
    const mem = process.memoryUsage();
    const t: Telemetry = {
      time: new Date().toISOString(),
      uptime_s: Math.round(process.uptime() * 1000) / 1000,
      memory: {
        rss_bytes: mem.rss,
        heap_used_bytes: mem.heapUsed,
        heap_total_bytes: mem.heapTotal,
        external_bytes: mem.external,
        system_total_bytes: totalmem(),
        system_free_bytes: freemem(),
      },
      cpu: { process_percent: Math.round(((cpu.user + cpu.system) / wallUs) * 1000) / 10, load_avg: loadavg() },
      event_loop: { mean_ms: ms(this.delay.mean), p99_ms: ms(this.delay.percentile(99)), max_ms: ms(this.delay.max) },
    };
    this.delay.reset();
    this.lastCpu = process.cpuUsage();
    this.lastTime = now;
    return t;
  }

  close(): void {
    this.delay.disable();
  }
}
