// Reading a record's events.jsonl without holding it whole: forward from a byte offset
// (node:readline over a read stream), backward from the end in chunks, and the bisection that
// finds where the events after a seq begin. A long episode's file runs to hundreds of MB.
import { createReadStream } from 'node:fs';
import { open } from 'node:fs/promises';
import { createInterface } from 'node:readline';

/** Bytes read at a time from the end, and at each bisection probe. */
const CHUNK = 64 * 1024;

/** Bytes of a line's head kept when the line itself is too long to hold (its seq, t and type). */
const HEAD = 512;

/** A line over the reader's cap: its size and its first bytes. */
export interface LongLine {
  bytes: number;
  head: string;
}

// The recorder writes {"episode":…,"seq":N,"t":…,"type":…}: the head of a line names them.
const HEAD_FIELDS =
  /^\{\s*"episode"\s*:\s*"([^"\\]*)"\s*,\s*"seq"\s*:\s*(\d+)\s*(?:,\s*"t"\s*:\s*(-?[\d.eE+-]+)\s*)?(?:,\s*"type"\s*:\s*"([a-z_]+)")?/;

/** The episode, seq, t and type a line's head names as the recorder writes them; null otherwise. */
export function headFields(head: string): { episode: string; seq: number; t?: number; type?: string } | null {
  const m = HEAD_FIELDS.exec(head);
  if (!m) return null;
  return {
    episode: m[1]!,
    seq: Number(m[2]),
    ...(m[3] !== undefined ? { t: Number(m[3]) } : {}),
    ...(m[4] !== undefined ? { type: m[4] } : {}),
  };
}

/** The lines of a file from byte `start` on, each without its newline (blank ones included). */
export async function* linesForward(file: string, start = 0): AsyncGenerator<string> {
  const stream = createReadStream(file, { start, encoding: 'utf8' });
  const lines = createInterface({ input: stream, crlfDelay: Number.POSITIVE_INFINITY });
  try {
    for await (const line of lines) yield line;
  } finally {
    lines.close();
    stream.destroy();
  }
}

/**
 * The lines of a file from the last to the first, read CHUNK bytes at a time from the end; a line
 * over `maxLine` bytes is never held whole but given as a LongLine. Reading stops once `maxScan`
 * bytes are read (the line under way is not given): a few records of GBs must not be read
 * through, which zeros left by a crash or a hole could make one line long.
 */
export async function* linesBackward(
  file: string,
  maxLine: number,
  maxScan = Number.POSITIVE_INFINITY,
): AsyncGenerator<string | LongLine> {
  const fh = await open(file, 'r');
  try {
    let pos = (await fh.stat()).size;
    if (pos === 0) return;
    const buf = Buffer.alloc(CHUNK);
    // The part of the current line read so far (its end), and whether it is already too long.
    let tail: Buffer[] = [];
    let tailBytes = 0;
    let long = false;
    let head = Buffer.alloc(0);
    const take = (piece: Buffer) => {
      tailBytes += piece.length;
      if (!long && tailBytes > maxLine) {
        long = true;
        head = Buffer.concat([...tail]).subarray(0, HEAD);
        tail = [];
      }
      if (long) head = Buffer.concat([piece, head]).subarray(0, HEAD);
      else tail.unshift(Buffer.from(piece)); // a copy: buf is read into again
    };
    const line = (): string | LongLine => {
      const out = long ? { bytes: tailBytes, head: head.toString('utf8') } : Buffer.concat(tail).toString('utf8');
      tail = [];
      tailBytes = 0;
      long = false;
      head = Buffer.alloc(0);
      return out;
    };
    const size = pos;
    while (pos > 0) {
      if (size - pos >= maxScan) return;
      const n = Math.min(CHUNK, pos);
      pos -= n;
      await fh.read(buf, 0, n, pos);
      let end = n;
      for (let i = n - 1; i >= 0; i--) {
        if (buf[i] !== 0x0a) continue;
        take(buf.subarray(i + 1, end));
        yield line();
        end = i;
      }
      take(buf.subarray(0, end));
    }
    yield line();
  } finally {
    await fh.close();
  }
}

/**
 * A byte offset where a line starts whose seq is at most `afterSeq` (0 when none is known),
 * found by bisection: the recorder appends events in seq order, so every line before it is at
 * most that too. A probe whose line head names no seq narrows to the left: slower, never wrong.
 */
export async function offsetAfter(file: string, afterSeq: number): Promise<number> {
  if (afterSeq < 0) return 0;
  const fh = await open(file, 'r');
  try {
    let lo = 0;
    let hi = (await fh.stat()).size;
    const buf = Buffer.alloc(CHUNK);
    while (hi - lo > CHUNK) {
      const mid = lo + Math.floor((hi - lo) / 2);
      const { bytesRead } = await fh.read(buf, 0, CHUNK, mid);
      const nl = buf.subarray(0, bytesRead).indexOf(0x0a);
      const start = mid + nl + 1;
      const seq = nl < 0 || start >= hi ? undefined : headFields(buf.subarray(nl + 1, bytesRead).toString('utf8'))?.seq;
      if (seq !== undefined && seq <= afterSeq) lo = start;
      else hi = mid;
    }
    return lo;
  } finally {
    await fh.close();
  }
}
