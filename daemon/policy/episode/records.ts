// Episode records under <data_dir>/episodes/<id>/: episode.json (the start and, once ended, the
// end), events.jsonl (every event), states.jsonl (the measured state at each observation),
// commands.jsonl (every trajectory, gripper and stop command sent to the robot) and images/.
// Retention (retention.ts) and the marking of interrupted records (interrupted.ts) walk them.
import { appendFileSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { readdir, rename, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Observation } from './observation.js';
import type { EpisodeEvent } from './types.js';

export const episodesDir = (dataDir: string) => join(dataDir, 'episodes');

/** Episode ids sort by start time: ep-YYYYMMDD-HHMMSS-<random>. */
export const EPISODE_ID = /^ep-\d{8}-\d{6}-[0-9a-f]{6}$/;

export function newEpisodeId(date: Date, random: string): string {
  const iso = date.toISOString();
  return `ep-${iso.slice(0, 10).replaceAll('-', '')}-${iso.slice(11, 19).replaceAll(':', '')}-${random}`;
}

export class EpisodeRecorder {
  readonly dir: string;

  constructor(dataDir: string, id: string, start: Record<string, unknown>) {
    this.dir = join(episodesDir(dataDir), id);
    mkdirSync(join(this.dir, 'images'), { recursive: true });
    writeJsonAtomic(join(this.dir, 'episode.json'), { id, ...start });
  }

  event(e: EpisodeEvent, images?: Observation['images']): void {
    for (const img of images ?? []) writeFileSync(join(this.dir, 'images', img.id), img.bytes);
    if (e.type === 'observation') this.line('states.jsonl', { decision: e.decision, t: e.t, arms: e.state });
    this.line('events.jsonl', e);
    if (e.type === 'finished') {
      const file = join(this.dir, 'episode.json');
      const start = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
      writeJsonAtomic(file, { ...start, state: e.state, reason: e.reason, used: e.used });
    }
  }

  command(t: number, type: string, msg: unknown): void {
    this.line('commands.jsonl', { t, type, msg });
  }

  private line(file: string, value: unknown): void {
    appendFileSync(join(this.dir, file), `${JSON.stringify(value)}\n`);
  }
}

const jsonText = (value: unknown) => `${JSON.stringify(value, null, 2)}\n`;

/** Written beside and renamed over: a crash or a full disk leaves the old file whole, never a cut one. */
function writeJsonAtomic(file: string, value: unknown): void {
  writeFileSync(`${file}.tmp`, jsonText(value));
  renameSync(`${file}.tmp`, file);
}

/** writeJsonAtomic without holding the event loop (records of other daemon runs). */
export async function replaceJson(file: string, value: unknown): Promise<void> {
  await writeFile(`${file}.tmp`, jsonText(value));
  await rename(`${file}.tmp`, file);
}

/** A file of an episode's record; throws a readable error when there is no such record. */
function readRecord(dataDir: string, id: string, name: string): string {
  if (!EPISODE_ID.test(id))
    throw new Error(`episode id: must look like ep-20260101-120000-abcdef, got ${JSON.stringify(id)}`);
  const file = join(episodesDir(dataDir), id, name);
  try {
    return readFileSync(file, 'utf8');
  } catch {
    throw new Error(`episode ${id}: no record at ${file}`);
  }
}

/** An episode's episode.json (the start and, once ended, the end). */
export function readEpisodeMeta(dataDir: string, id: string): Record<string, unknown> {
  return JSON.parse(readRecord(dataDir, id, 'episode.json')) as Record<string, unknown>;
}

/** An episode's events as recorded (lines that do not parse are left out: see parseEvents). */
export function readEvents(dataDir: string, id: string): EpisodeEvent[] {
  return parseEvents(readRecord(dataDir, id, 'events.jsonl')).events;
}

/** The events of an events.jsonl text; `damaged` counts the lines that are not JSON (a line cut
 *  off by a crash or a full disk while it was appended). */
export function parseEvents(text: string): { events: EpisodeEvent[]; damaged: number } {
  const events: EpisodeEvent[] = [];
  let damaged = 0;
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    try {
      events.push(JSON.parse(line) as EpisodeEvent);
    } catch {
      damaged++;
    }
  }
  return { events, damaged };
}

/** The ids of the records under <data_dir>/episodes, oldest first; none when there is no such folder. */
export async function recordIds(dataDir: string): Promise<string[]> {
  const names = await readdir(episodesDir(dataDir)).catch(() => [] as string[]);
  return names.filter((f) => EPISODE_ID.test(f)).sort();
}

/** The bytes of the files under a record's folder and the newest file's modification time (ms). */
export async function recordFiles(path: string): Promise<{ bytes: number; newestMs: number }> {
  let bytes = 0;
  let newestMs = 0;
  for (const d of await readdir(path, { withFileTypes: true })) {
    const p = join(path, d.name);
    if (d.isDirectory()) {
      const sub = await recordFiles(p);
      bytes += sub.bytes;
      newestMs = Math.max(newestMs, sub.newestMs);
    } else {
      const s = await stat(p);
      bytes += s.size;
      newestMs = Math.max(newestMs, s.mtimeMs);
    }
  }
  return { bytes, newestMs };
}
