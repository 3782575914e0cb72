// The frames of one demonstration video: a frame folder read in name order (numbers compared as
// numbers), or a video file decoded by ffmpeg; each frame with its time in seconds.
import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { extractFrames } from './ffmpeg.js';
import { type ContextOptions, ContextInputError, type VideoInput } from './types.js';

export interface FrameSet {
  paths: string[];
  times: number[];
  /** Removes what decoding made (the temporary folder of a video file). */
  release(): Promise<void>;
}

const FRAME = /\.(png|jpe?g)$/i;

/** Input checked by checkContextInput; `field` names the video in the input (e.g. demonstrations[0].videos[1]). */
export async function loadFrames(video: VideoInput, field: string, o: ContextOptions): Promise<FrameSet> {
  const src = video.source;
  const resolve = (p: string, f: string) => (o.resolvePath ? o.resolvePath(p, f) : Promise.resolve(p));
  if (src.kind === 'video') {
    const fps = src.fps ?? o.videoFps;
    const path = await resolve(src.path, `${field}.source.path`);
    const out = await extractFrames(path, `${field}.source.path`, {
      fps,
      maxSide: o.imageMaxSide,
      maxFrames: o.maxFrames,
      timeoutMs: o.ffmpegTimeoutMs,
      pathEnv: o.pathEnv ?? process.env.PATH,
    });
    try {
      const paths = await listFrames(out.dir, `${field}.source.path`, o.maxFrames, path);
      return { paths, times: paths.map((_, i) => i / fps), release: out.remove };
    } catch (e) {
      await out.remove();
      throw e;
    }
  }
  const dirField = `${field}.source.dir`;
  const dir = await resolve(src.dir, dirField);
  const paths = await listFrames(dir, dirField, o.maxFrames, dir);
  // checkContextInput made sure exactly one of fps and timestamps is there.
  const fps = src.fps;
  const times =
    fps !== undefined
      ? paths.map((_, i) => i / fps)
      : await readTimestamps(await resolve(src.timestamps!, `${field}.source.timestamps`), paths.length, field);
  return { paths, times, release: async () => {} };
}

async function listFrames(dir: string, field: string, maxFrames: number, named: string): Promise<string[]> {
  let names: string[];
  try {
    if (!(await stat(dir)).isDirectory()) throw new Error('not a folder');
    names = await readdir(dir);
  } catch (e) {
    const why =
      (e as NodeJS.ErrnoException).code === 'ENOENT' ? 'does not exist' : `cannot be read (${(e as Error).message})`;
    throw new ContextInputError(`${field}: frame folder ${dir} ${why}`, field, dir);
  }
  const frames = names.filter((n) => FRAME.test(n)).sort(naturalCompare);
  if (frames.length === 0) throw new ContextInputError(`${field}: ${named} has no PNG or JPEG frames`, field, named);
  if (frames.length > maxFrames)
    throw new ContextInputError(
      `${field}: ${named} has more than ${maxFrames} frames (options.maxFrames); give fewer frames or a lower fps`,
      field,
      named,
    );
  return frames.map((n) => join(dir, n));
}

async function readTimestamps(file: string, frames: number, field: string): Promise<number[]> {
  const f = `${field}.source.timestamps`;
  const fail = (why: string): never => {
    throw new ContextInputError(`${f}: ${file}: ${why}`, f, file);
  };
  let value: unknown;
  try {
    value = JSON.parse(await readFile(file, 'utf8'));
  } catch (e) {
    return fail(`cannot read a JSON array of frame times (${(e as Error).message})`);
  }
  if (!Array.isArray(value)) return fail('expected a JSON array of frame times in seconds');
  if (value.length !== frames) fail(`${value.length} times for ${frames} frames`);
  value.forEach((t, i) => {
    if (typeof t !== 'number' || !Number.isFinite(t)) fail(`entry ${i}: expected a number, got ${JSON.stringify(t)}`);
    if (i > 0 && t <= value[i - 1]) fail(`entry ${i}: ${t} is not after ${value[i - 1]} (times must increase)`);
  });
  return value as number[];
}

/** Name order with digit runs compared as numbers (frame2 before frame10); ties by plain order. */
export function naturalCompare(a: string, b: string): number {
  const pa = a.match(/\d+|\D+/g) ?? [];
  const pb = b.match(/\d+|\D+/g) ?? [];
  for (let i = 0; i < Math.min(pa.length, pb.length); i++) {
    const x = pa[i]!;
    const y = pb[i]!;
    if (x === y) continue;
    const nx = /^\d/.test(x) && /^\d/.test(y);
    if (nx && Number(x) !== Number(y)) return Number(x) - Number(y);
    return x < y ? -1 : 1;
  }
  return pa.length - pb.length || (a < b ? -1 : a > b ? 1 : 0);
}
