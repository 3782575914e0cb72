// Structured logs (pino): JSON lines, pretty on a TTY, one level per namespace.
// Namespaces are dotted ("mqtt.client"); a configured level covers the namespace's children.
import { pino, type DestinationStream, type Logger } from 'pino';
import pretty from 'pino-pretty';
import type { LoggingConfig, LogLevel } from './config/schema.js';

export type { Logger };

const ORDER: LogLevel[] = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'];

export interface LogOptions {
  /** Where lines go (default stdout, synchronously so nothing is lost on exit). */
  destination?: DestinationStream;
  isTty?: boolean;
}

export class Logs {
  readonly root: Logger;
  private readonly cache = new Map<string, Logger>();

  constructor(
    private readonly config: LoggingConfig,
    opts: LogOptions = {},
  ) {
    const tty = opts.isTty ?? process.stdout.isTTY === true;
    const usePretty = config.format === 'pretty' || (config.format === 'auto' && tty && !opts.destination);
    const stream = usePretty
      ? pretty({ colorize: tty, sync: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname' })
      : (opts.destination ?? pino.destination({ dest: 1, sync: true }));
    // The root sits at the most verbose configured level so children can be more verbose than the default.
    const levels = [config.level, ...Object.values(config.levels)];
    const lowest = levels.reduce((a, b) => (ORDER.indexOf(a) <= ORDER.indexOf(b) ? a : b));
    this.root = pino({ level: lowest, base: { pid: process.pid } }, stream);
  }

  /** The level that applies to `ns`: the longest configured prefix, else the default. */
  levelFor(ns: string): LogLevel {
    let best: string | undefined;
    for (const key of Object.keys(this.config.levels)) {
      if ((ns === key || ns.startsWith(key + '.')) && (!best || key.length > best.length)) best = key;
    }
    return best ? this.config.levels[best]! : this.config.level;
  }

  /** The logger for one namespace (cached: one child per namespace). */
  get(ns: string): Logger {
    let log = this.cache.get(ns);
    if (!log) {
      log = this.root.child({ ns }, { level: this.levelFor(ns) });
      this.cache.set(ns, log);
    }
    return log;
  }
}
