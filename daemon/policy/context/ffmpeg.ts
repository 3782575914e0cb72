// Video files are decoded by spawning ffmpeg (found on PATH, never bundled) into a temporary frame
// folder at a fixed rate, so they then read like any frame folder.
import { execFile } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { ContextInputError } from './types.js';

/** The first executable `name` in the folders of `pathEnv`, or null. */
export function findOnPath(name: string, pathEnv: string | undefined): string | null {
  for (const dir of (pathEnv ?? '').split(delimiter)) {
    if (dir === '') continue;
    const p = join(dir, name);
    try {
      accessSync(p, constants.X_OK);
      return p;
    } catch {
      // not here; the next folder
    }
  }
  return null;
}

export interface ExtractedFrames {
  dir: string;
  remove(): Promise<void>;
}

export interface ExtractOptions {
  fps: number;
  /** Longest side of the frames written (never enlarged): no frame is sent larger, and disk use stays small. */
  maxSide: number;
  maxFrames: number;
  timeoutMs: number;
  pathEnv: string | undefined;
}

/** Frames f000000.jpg, f000001.jpg … of `file` at `fps`; one more than maxFrames at most, so a caller sees the excess. */
export async function extractFrames(file: string, field: string, o: ExtractOptions): Promise<ExtractedFrames> {
  try {
    if (!(await stat(file)).isFile()) throw new Error('not a regular file');
  } catch (e) {
    throw new ContextInputError(`${field}: video file ${file} cannot be read (${(e as Error).message})`, field, file);
  }
  const ffmpeg = findOnPath('ffmpeg', o.pathEnv);
  if (!ffmpeg)
    throw new ContextInputError(
      `${field}: ${file} is a video file and decoding it needs ffmpeg, which is not on PATH; install ffmpeg or give a frame folder`,
      field,
      file,
    );
  const dir = await mkdtemp(join(tmpdir(), 'brainstem-frames-'));
  const remove = () => rm(dir, { recursive: true, force: true });
  const box = `w='min(iw,${o.maxSide})':h='min(ih,${o.maxSide})':force_original_aspect_ratio=decrease:force_divisible_by=2`;
  const args = ['-nostdin', '-hide_banner', '-loglevel', 'error', '-i', file, '-vf', `fps=${o.fps},scale=${box}`];
  args.push('-frames:v', String(o.maxFrames + 1), '-q:v', '2', '-start_number', '0', join(dir, 'f%06d.jpg'));
  const problem = await new Promise<string | null>((done) => {
    execFile(ffmpeg, args, { timeout: o.timeoutMs, maxBuffer: 1 << 20 }, (err, _out, stderr) => {
      if (!err) return done(null);
      const why = err.killed
        ? `no result within ${o.timeoutMs} ms`
        : String(stderr).trim().split('\n').slice(-3).join(' ');
      done(why || err.message);
    });
  });
  if (problem !== null) {
    await remove();
    throw new ContextInputError(`${field}: ffmpeg could not decode ${file}: ${problem}`, field, file);
  }
  return { dir, remove };
}
