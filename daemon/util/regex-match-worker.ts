// Worker side of matchInWorker: tests each pattern against every subject and posts each pattern's
// matches as it finishes, so the caller can name the pattern still running when time runs out.
import { parentPort, workerData } from 'node:worker_threads';

const { patterns, subjects } = workerData as { patterns: string[]; subjects: string[] };
for (let p = 0; p < patterns.length; p++) {
  const re = new RegExp(patterns[p]!);
  parentPort!.postMessage(subjects.map((s) => re.test(s)));
}
