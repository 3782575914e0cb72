// Retention of episode records: the oldest past a count, a total size or an age are removed when
// an episode starts. The walk is asynchronous (a few records at a time) so thousands of records
// never hold the event loop while episodes run.
import { rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { mapLimit } from '../../util/map-limit.js';
import { episodesDir, recordFiles, recordIds } from './records.js';

/** Records walked at once. */
const WALK_CONCURRENCY = 8;

export interface Retention {
  maxEpisodes: number;
  maxBytes: number;
  maxAgeDays: number;
}

/** Running episodes, asked once the records are listed: one started while the walk ran is kept. */
export interface RunningRecords {
  has(id: string): boolean;
}

/**
 * Removes the oldest records past the limits, never those `keep` has (running episodes), whose
 * bytes do not count either; resolves to the ids removed.
 */
export async function applyRetention(
  dataDir: string,
  r: Retention,
  keep: RunningRecords,
  nowMs: number,
): Promise<string[]> {
  const root = episodesDir(dataDir);
  const ids = await recordIds(dataDir);
  // Running episodes' bytes do not count: still growing, they alone could pass max_bytes and send
  // every finished record without bringing the total under it.
  const entries = await mapLimit(
    ids.filter((id) => !keep.has(id)),
    WALK_CONCURRENCY,
    async (id) => {
      const path = join(root, id);
      const [files, s] = await Promise.all([recordFiles(path), stat(path)]);
      return { id, path, bytes: files.bytes, mtime: s.mtimeMs };
    },
  );
  let total = entries.reduce((n, e) => n + e.bytes, 0);
  let count = ids.length;
  const removed: string[] = [];
  for (const e of entries) {
    const old = nowMs - e.mtime > r.maxAgeDays * 86_400_000;
    if (!old && count <= r.maxEpisodes && total <= r.maxBytes) continue;
    await rm(e.path, { recursive: true, force: true });
    removed.push(e.id);
    total -= e.bytes;
    count--;
  }
  return removed;
}
