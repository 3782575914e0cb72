// Regular expressions from files users did not write (an adapter's config) tested off the event
// loop with a time limit: a pattern like (.|.)*(.|.)*z backtracks for minutes on a 40-character
// name, which on the main thread would stop the daemon answering anything.
import { Worker } from 'node:worker_threads';

export class PatternTimeout extends Error {
  constructor(
    /** Index of the pattern that was running. */
    readonly pattern: number,
    readonly ms: number,
  ) {
    super(`pattern ${pattern} did not finish within ${ms} ms`);
  }
}

/**
 * matches[p][s]: whether patterns[p] (compiled without flags; check its syntax first) matches
 * subjects[s]. Rejects with PatternTimeout when all of them take longer than `ms`.
 */
export function matchInWorker(
  patterns: readonly string[],
  subjects: readonly string[],
  ms = 2000,
): Promise<boolean[][]> {
  if (patterns.length === 0) return Promise.resolve([]);
  return new Promise((resolve, reject) => {
    const matches: boolean[][] = [];
    const worker = new Worker(new URL('./regex-match-worker.js', import.meta.url), {
      workerData: { patterns, subjects },
    });
    let done = false;
    const settle = (err?: Error) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      void worker.terminate();
      if (err) reject(err);
      else resolve(matches);
    };
    const timer = setTimeout(() => settle(new PatternTimeout(matches.length, ms)), ms);
    worker.on('message', (m: boolean[]) => {
      matches.push(m);
      if (matches.length === patterns.length) settle();
    });
    worker.on('error', (err) => settle(err));
    worker.on('exit', () => {
      if (matches.length < patterns.length) settle(new Error('the pattern worker stopped early'));
    });
  });
}
