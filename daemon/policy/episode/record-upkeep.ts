// The policy service's upkeep of episode records: at its start, records a stopped daemon left
// unfinished are marked interrupted; at each episode start, retention removes the oldest past the
// limits. Both run asynchronously; a record they cannot read or remove is logged, never fatal.
import type { Logger } from '../../log.js';
import type { PolicyConfig } from '../config.js';
import { markInterrupted } from './interrupted.js';
import { applyRetention, type RunningRecords } from './retention.js';

export class RecordUpkeep {
  /** The retention pass under way (passes run one after another, never over each other's files). */
  private retention: Promise<void> = Promise.resolve();

  constructor(
    private readonly dataDir: string,
    private readonly limits: PolicyConfig['records'],
    private readonly running: RunningRecords,
    private readonly log: Logger,
  ) {}

  /** Marks the records without an end state, none of them running here, as interrupted. */
  async markInterrupted(): Promise<void> {
    const { marked, problems } = await markInterrupted(this.dataDir, this.running, Date.now());
    if (marked.length) this.log.info({ marked }, 'marked episode records the daemon stopped in as interrupted');
    for (const p of problems) this.log.warn(p, 'could not check an episode record for an end state');
  }

  /** Starts a retention pass after the one under way; `idle()` resolves once all have ended. */
  retain(): void {
    const r = this.limits;
    this.retention = this.retention.then(async () => {
      try {
        const removed = await applyRetention(
          this.dataDir,
          { maxEpisodes: r.max_episodes, maxBytes: r.max_bytes, maxAgeDays: r.max_age_days },
          this.running,
          Date.now(),
        );
        if (removed.length) this.log.info({ removed }, 'removed old episode records');
      } catch (err) {
        this.log.warn({ err: (err as Error).message }, 'could not apply the retention of episode records');
      }
    });
  }

  idle(): Promise<void> {
    return this.retention;
  }
}
