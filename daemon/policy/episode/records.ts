// Episode records under <data_dir>/episodes/<id>/: episode.json (the start and, once ended, the
// end), events.jsonl (every event), states.jsonl (the measured state at each observation),
// commands.jsonl (every trajectory, gripper and stop command sent to the robot) and images/.
// Retention (retention.ts) and the marking of interrupted records (interrupted.ts) walk them.
import { appendFileSync, existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { readdir, rename, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { makeDirs } from '../../util/make-dirs.js';
import { eventsOf } from './event-page.js';
import type { Observation } from './observation.js';
import type { EpisodeEvent } from './types.js';

export const episodesDir = (dataDir: string) => join(dataDir, 'episodes');

/** Episode ids sort by start time: ep-YYYYMMDD-HHMMSS-<random>. */
export const EPISODE_ID = /^ep-\d{8}-\d{6}-[0-9a-f]{6}$/;

export function newEpisodeId(date: Date, random: string): string {
  const iso = date.toISOString();
  return `ep-${iso.slice(0, 10).replaceAll('-', '')}-${iso.slice(11, 19).replaceAll(':', '')}-${random}`;
}

/** Past `bytes` a running record saves no more images (`rule` says where the cap comes from). */
export interface ImageCap {
  bytes: number;
  rule: string;
}

/** Half of policy.records.max_bytes: retention leaves a running record alone, so without a cap
 *  one long episode (a frame per camera per decision) outgrew the total many times over. */
export const imageCapOf = (maxBytes: number): ImageCap => ({
  bytes: Math.floor(maxBytes / 2),
  rule: `half of policy.records.max_bytes (${maxBytes})`,
});

/** What the recorder says once, at the observation whose images it did not save. */
export interface ImagesStopped {
  decision: unknown;
  bytes: number;
  max_bytes: number;
  message: string;
}

export class EpisodeRecorder {
  readonly dir: string;
  /** Bytes written to the record so far (episode.json's first version, lines and images). */
  private bytes = 0;
  private imagesStopped = false;

  constructor(
    dataDir: string,
    id: string,
    start: Record<string, unknown>,
    private readonly cap: ImageCap = { bytes: Number.POSITIVE_INFINITY, rule: 'no cap' },
  ) {
    this.dir = join(episodesDir(dataDir), id);
    // 0700 like every folder the daemon makes in data_dir (which this may be the first to create).
    makeDirs(join(this.dir, 'images'), 0o700);
    this.bytes += writeJsonAtomic(join(this.dir, 'episode.json'), { id, ...start });
  }

  /** Records an event and its images; returns what to tell of the images once it stops saving them. */
  event(e: EpisodeEvent, images?: Observation['images']): ImagesStopped | undefined {
    const imageBytes = (images ?? []).reduce((n, img) => n + img.bytes.byteLength, 0);
    let stopped: ImagesStopped | undefined;
    if (imageBytes > 0 && !this.imagesStopped && this.bytes + imageBytes > this.cap.bytes) {
      this.imagesStopped = true;
      stopped = {
        decision: e.decision,
        bytes: this.bytes,
        max_bytes: this.cap.bytes,
        message: `images are no longer saved: the record has ${this.bytes} bytes and this observation's ${imageBytes} would pass ${this.cap.bytes}, ${this.cap.rule}; events are still written`,
      };
    }
    const saved = imageBytes > 0 && !this.imagesStopped;
    if (saved) for (const img of images ?? []) writeFileSync(join(this.dir, 'images', img.id), img.bytes);
    if (saved) this.bytes += imageBytes;
    if (e.type === 'observation') this.line('states.jsonl', { decision: e.decision, t: e.t, arms: e.state });
    // The observation still names its images (as sent to the model): the line says they are not on disk.
    this.line('events.jsonl', imageBytes > 0 && !saved ? { ...e, images_saved: false } : e);
    if (e.type === 'finished') {
      const file = join(this.dir, 'episode.json');
      const start = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
      writeJsonAtomic(file, { ...start, state: e.state, reason: e.reason, used: e.used });
    }
    return stopped;
  }

  command(t: number, type: string, msg: unknown): void {
    this.line('commands.jsonl', { t, type, msg });
  }

  private line(file: string, value: unknown): void {
    const text = `${JSON.stringify(value)}\n`;
    appendFileSync(join(this.dir, file), text);
    this.bytes += Buffer.byteLength(text);
  }
}

const jsonText = (value: unknown) => `${JSON.stringify(value, null, 2)}\n`;

/** Written beside and renamed over: a crash or a full disk leaves the old file whole, never a cut
 *  one. Returns the bytes written. */
function writeJsonAtomic(file: string, value: unknown): number {
  const text = jsonText(value);
  writeFileSync(`${file}.tmp`, text);
  renameSync(`${file}.tmp`, file);
  return Buffer.byteLength(text);
}

/** writeJsonAtomic without holding the event loop (records of other daemon runs). */
export async function replaceJson(file: string, value: unknown): Promise<void> {
  await writeFile(`${file}.tmp`, jsonText(value));
  await rename(`${file}.tmp`, file);
}

/** The path of a file of an episode's record; throws a readable error when there is no such record. */
function recordFile(dataDir: string, id: string, name: string): string {
  if (!EPISODE_ID.test(id))
    throw new Error(`episode id: must look like ep-20260101-120000-abcdef, got ${JSON.stringify(id)}`);
  const file = join(episodesDir(dataDir), id, name);
  if (!existsSync(file)) throw new Error(`episode ${id}: no record at ${file}`);
  return file;
}

/** An episode's episode.json (the start and, once ended, the end). */
export function readEpisodeMeta(dataDir: string, id: string): Record<string, unknown> {
  return JSON.parse(readFileSync(recordFile(dataDir, id, 'episode.json'), 'utf8')) as Record<string, unknown>;
}

/** An episode's events as recorded, read a line at a time (lines that are not JSON, cut off by a
 *  crash or a full disk, are left out); `keep` picks the events held, so the rest are never all in memory. */
export async function readEvents(
  dataDir: string,
  id: string,
  keep: (e: EpisodeEvent) => boolean = () => true,
): Promise<EpisodeEvent[]> {
  const events: EpisodeEvent[] = [];
  for await (const e of recordEvents(dataDir, id)) if (keep(e)) events.push(e);
  return events;
}

/** An episode's events one at a time (see readEvents). */
export function recordEvents(dataDir: string, id: string): AsyncGenerator<EpisodeEvent> {
  return eventsOf(recordFile(dataDir, id, 'events.jsonl'));
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
