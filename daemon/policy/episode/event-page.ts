// Pages of a record's events for policy.get and policy.record: the events after a seq, or the
// last ones, at most `limit` and PAGE_BYTES of lines, read asynchronously and only as far as the
// page needs. A whole long record (100k events, 213 MB) took 1.7 s of the event loop to send and
// went past the WebSocket's ws_max_buffered_bytes, which closed the client's connection.
import { bool, int } from '../../../robot/common/validation/builders.js';
import { headFields, linesBackward, linesForward, offsetAfter } from './event-lines.js';
import type { EpisodeEvent } from './types.js';

/** Bytes of event lines in one page: well under ws_max_buffered_bytes (16 MiB by default). */
export const PAGE_BYTES = 8 * 1024 * 1024;
export const PAGE_LIMIT = { default: 1000, max: 10_000 };

/** The paging params of policy.get and policy.record. */
export const pageParams = {
  after_seq: int({
    min: -1,
    default: -1,
    doc: 'only events whose seq is greater (a reply’s next_after_seq); -1: from the first',
  }),
  limit: int({ min: 1, max: PAGE_LIMIT.max, default: PAGE_LIMIT.default, doc: 'most events in the reply' }),
  last: bool({ default: false, doc: 'the last `limit` events instead (after_seq is not used)' }),
};

export interface EventPage {
  events: EpisodeEvent[];
  /** Lines of the page's stretch that are not JSON (cut off by a crash or a full disk). */
  damaged_lines?: number;
  /** More events follow: the after_seq of the next page. */
  next_after_seq?: number;
}

export interface PageRequest {
  after_seq: number;
  limit: number;
  last: boolean;
}

/** An event of a line, or null when the line is not one (not JSON, or no numeric seq). */
function parseLine(line: string): EpisodeEvent | null {
  try {
    const e = JSON.parse(line) as EpisodeEvent;
    return e !== null && typeof e === 'object' && typeof e.seq === 'number' ? e : null;
  } catch {
    return null;
  }
}

/** Stands for an event whose line alone is over the page's bytes (so that paging moves past it):
 *  its episode, seq, t and type, `omitted_bytes` (the line's size) and `page_bytes` (the cap). */
const stub = (e: Pick<EpisodeEvent, 'episode' | 'seq' | 't' | 'type'>, bytes: number, cap: number): EpisodeEvent => ({
  episode: e.episode,
  seq: e.seq,
  t: e.t,
  type: e.type,
  omitted_bytes: bytes,
  page_bytes: cap,
});

/** The stub of a line too long to have been read whole, from its head; null when it names no seq. */
function stubOfHead(head: string, bytes: number, cap: number): EpisodeEvent | null {
  const f = headFields(head);
  return f ? stub({ ...f, t: f.t ?? 0, type: (f.type ?? 'state') as EpisodeEvent['type'] }, bytes, cap) : null;
}

/** A page of `file`'s events (see pageParams); a missing file has none. */
export async function readEventPage(file: string, r: PageRequest, maxBytes = PAGE_BYTES): Promise<EventPage> {
  try {
    return await (r.last ? lastPage(file, r.limit, maxBytes) : pageAfter(file, r.after_seq, r.limit, maxBytes));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { events: [] };
    throw err;
  }
}

const page = (events: EpisodeEvent[], damaged: number, next?: number): EventPage => ({
  events,
  ...(damaged ? { damaged_lines: damaged } : {}),
  ...(next !== undefined ? { next_after_seq: next } : {}),
});

async function pageAfter(file: string, afterSeq: number, limit: number, maxBytes: number): Promise<EventPage> {
  const events: EpisodeEvent[] = [];
  let damaged = 0;
  let bytes = 0;
  for await (const line of linesForward(file, await offsetAfter(file, afterSeq))) {
    if (line.trim() === '') continue;
    if (events.length >= limit) return page(events, damaged, events.at(-1)!.seq);
    const n = Buffer.byteLength(line) + 1;
    const e = parseLine(line);
    if (e === null) {
      damaged++;
      continue;
    }
    // Lines up to the cursor (the bisection starts at or before it); damaged ones there are an earlier page's.
    if (e.seq <= afterSeq) {
      damaged = 0;
      continue;
    }
    if (bytes + n > maxBytes) {
      if (events.length) return page(events, damaged, events.at(-1)!.seq);
      events.push(stub(e, n, maxBytes));
      bytes += 200; // about the stub's size
      continue;
    }
    events.push(e);
    bytes += n;
  }
  return page(events, damaged);
}

async function lastPage(file: string, limit: number, maxBytes: number): Promise<EventPage> {
  const events: EpisodeEvent[] = [];
  let damaged = 0;
  let bytes = 0;
  // Twice the page: enough for a full page and the line that overflows it.
  for await (const line of linesBackward(file, maxBytes, 2 * maxBytes)) {
    if (typeof line === 'string' && line.trim() === '') continue;
    if (events.length >= limit) break;
    const n = (typeof line === 'string' ? Buffer.byteLength(line) : line.bytes) + 1; // and its newline
    const e = typeof line === 'string' ? parseLine(line) : stubOfHead(line.head, n, maxBytes);
    if (e === null) {
      damaged++;
      continue;
    }
    if (bytes + n > maxBytes) {
      if (events.length) break;
      events.push(typeof line === 'string' ? stub(e, n, maxBytes) : e);
      bytes += 200; // about the stub's size
      continue;
    }
    events.push(e);
    bytes += n;
  }
  return page(events.reverse(), damaged);
}

/** Every event of `file` in order, one line held at a time (damaged lines left out). */
export async function* eventsOf(file: string): AsyncGenerator<EpisodeEvent> {
  for await (const line of linesForward(file)) {
    if (line.trim() === '') continue;
    const e = parseLine(line);
    if (e) yield e;
  }
}
