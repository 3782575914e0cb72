// Records the daemon left unfinished: a daemon killed while an episode ran (a crash, SIGKILL, power
// lost) never wrote its end to episode.json. At the policy service's start such records, none of
// them a running episode of this process, are marked ended as `interrupted`.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { mapLimit } from '../../util/map-limit.js';
import { linesBackward } from './event-lines.js';
import { episodesDir, recordFiles, recordIds, replaceJson } from './records.js';
import type { RunningRecords } from './retention.js';
import type { RecordEndState } from './types.js';

export const INTERRUPTED_REASON = 'the daemon stopped while the episode ran';

/** Records read at once. */
const READ_CONCURRENCY = 8;

/** Longest events.jsonl line read for its `used` (a decision's, with the model's raw output);
 *  longer ones are passed over. */
const MAX_LINE_BYTES = 16 * 1024 * 1024;
/** Bytes read from the end of events.jsonl for the last `used`: past them the record is marked
 *  without one (progress events of one long move are far fewer). */
const MAX_SCAN_BYTES = 64 * 1024 * 1024;

export interface InterruptedMarking {
  marked: string[];
  /** Records that could not be read or written, with why (the others are marked regardless). */
  problems: { id: string; error: string }[];
}

/**
 * Marks every record whose episode.json has no end state, and that `running` does not have, as
 * ended `interrupted`: `ended_at` is its newest file's modification time (the last the daemon
 * wrote of it), `marked_at` now, and `used` the budget used as of its last decision.
 */
export async function markInterrupted(
  dataDir: string,
  running: RunningRecords,
  nowMs: number,
): Promise<InterruptedMarking> {
  const result: InterruptedMarking = { marked: [], problems: [] };
  const ids = await recordIds(dataDir);
  await mapLimit(ids, READ_CONCURRENCY, async (id) => {
    try {
      if (await markOne(join(episodesDir(dataDir), id), id, running, nowMs)) result.marked.push(id);
    } catch (err) {
      result.problems.push({ id, error: (err as Error).message });
    }
  });
  result.marked.sort();
  return result;
}

async function markOne(dir: string, id: string, running: RunningRecords, nowMs: number): Promise<boolean> {
  const file = join(dir, 'episode.json');
  // No episode.json: the daemon stopped before the episode's start was written; nothing to mark.
  const text = await readFile(file, 'utf8').catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') return null;
    throw err;
  });
  if (text === null) return false;
  const meta = JSON.parse(text) as Record<string, unknown>;
  if (typeof meta.state === 'string' || running.has(id)) return false;
  const { newestMs } = await recordFiles(dir);
  const used = await lastUsed(join(dir, 'events.jsonl'));
  const state: RecordEndState = 'interrupted';
  await replaceJson(file, {
    ...meta,
    state,
    reason: INTERRUPTED_REASON,
    ...(used ? { used } : {}),
    ended_at: new Date(newestMs).toISOString(),
    marked_at: new Date(nowMs).toISOString(),
  });
  return true;
}

/** The `used` of the last event that carries one (each decision does); none without events. The
 *  file is read backward from its end until that event, MAX_SCAN_BYTES at most: a long unfinished
 *  record is hundreds of MB, records are read 8 at a time, and episodes wait for the marking. */
export async function lastUsed(file: string): Promise<unknown> {
  try {
    for await (const line of linesBackward(file, MAX_LINE_BYTES, MAX_SCAN_BYTES)) {
      // Only lines that name `used` are parsed (most are progress, outcomes, observations).
      if (typeof line !== 'string' || !line.includes('"used"')) continue;
      try {
        const used = (JSON.parse(line) as { used?: unknown }).used;
        if (used !== undefined) return used;
      } catch {
        // a line cut off by a crash: the one before it may carry it
      }
    }
  } catch {
    // no events.jsonl, or one that cannot be read: the record is marked without `used`
  }
  return undefined;
}
