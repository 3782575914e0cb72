// Files the daemon reads at a client's or the config's word (model folders, LoRA adapters): only
// inside configured roots, only regular files and folders, symlinks resolved (a link out of the
// roots is outside), checked through fs.promises so a FIFO or a device never blocks the event loop.
import { constants, type Stats, closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { access, type FileHandle, open, readdir, realpath, stat } from 'node:fs/promises';
import { isAbsolute, join, relative, resolve, sep } from 'node:path';

/** outside: not under any root; missing: no such file; not_regular: a FIFO, socket, device…; too_large: over a read cap */
export type FileProblem = 'outside' | 'missing' | 'not_regular' | 'too_large';

export class FileAccessError extends Error {
  constructor(
    message: string,
    readonly problem: FileProblem,
    readonly path: string,
  ) {
    super(message);
    this.name = 'FileAccessError';
  }
}

/** What a non-regular file is, for messages (never its contents). */
export function fileKind(s: Stats): string {
  if (s.isFIFO()) return 'a FIFO';
  if (s.isSocket()) return 'a socket';
  if (s.isCharacterDevice() || s.isBlockDevice()) return 'a device';
  if (s.isDirectory()) return 'a folder';
  return 'not a regular file';
}

function inside(path: string, root: string): boolean {
  const r = relative(root, path);
  return r === '' || (r !== '..' && !r.startsWith(`..${sep}`) && !isAbsolute(r));
}

export class FileRoots {
  /**
   * @param roots absolute folders (or single files) that may be read
   * @param what names the files in messages ("adapter", "model")
   * @param key the config key that adds roots, named when a path is outside
   */
  constructor(
    readonly roots: readonly string[],
    readonly what: string,
    readonly key: string,
  ) {}

  /** The real path of `path` when it and its resolved target lie inside a root. */
  async resolve(path: string): Promise<string> {
    const abs = resolve(path);
    const roots = await this.realRoots();
    // Checked on the path as given first, so nothing outside the roots is ever touched.
    if (!roots.some((r) => inside(abs, r))) throw this.outside(abs, '');
    let real: string;
    try {
      real = await realpath(abs);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' || code === 'ENOTDIR') {
        throw new FileAccessError(`${this.what} path ${abs} does not exist`, 'missing', abs);
      }
      throw new FileAccessError(`${this.what} path ${abs} cannot be read (${code})`, 'not_regular', abs);
    }
    if (!roots.some((r) => inside(real, r))) throw this.outside(abs, ' through a symlink');
    return real;
  }

  /**
   * A regular file, or a folder whose entries are regular files or folders, inside the roots.
   * Returns the real path and whether it is a folder.
   */
  async entry(path: string): Promise<{ real: string; folder: boolean }> {
    const real = await this.resolve(path);
    try {
      return await this.checkEntry(path, real);
    } catch (e) {
      if (e instanceof FileAccessError) throw e;
      const code = (e as NodeJS.ErrnoException).code ?? (e as Error).message;
      throw new FileAccessError(`${this.what} path ${resolve(path)} cannot be read (${code})`, 'not_regular', real);
    }
  }

  private async checkEntry(path: string, real: string): Promise<{ real: string; folder: boolean }> {
    const s = await stat(real);
    if (s.isFile()) return { real, folder: false };
    if (!s.isDirectory()) throw this.notRegular(resolve(path), s);
    for (const e of await readdir(real, { withFileTypes: true })) {
      if (e.isFile() || e.isDirectory()) continue;
      const p = join(real, e.name);
      if (!e.isSymbolicLink()) throw this.notRegular(p, await stat(p));
      const target = await stat(await this.resolve(p));
      if (!target.isFile() && !target.isDirectory()) throw this.notRegular(p, target);
    }
    return { real, folder: true };
  }

  private async realRoots(): Promise<string[]> {
    const out: string[] = [];
    for (const r of this.roots) {
      out.push(resolve(r));
      // A root reached through a symlink (macOS /tmp) also counts by its real path.
      const real = await realpath(r).catch(() => undefined);
      if (real !== undefined) out.push(real);
    }
    return out;
  }

  private outside(abs: string, how: string): FileAccessError {
    return new FileAccessError(
      `${this.what} path ${abs} leads${how} outside the ${this.what} roots (${this.roots.join(', ') || 'none'}); add a folder to ${this.key} to allow it`,
      'outside',
      abs,
    );
  }

  private notRegular(p: string, s: Stats): FileAccessError {
    return new FileAccessError(`${this.what} file ${p} is ${fileKind(s)}, not a regular file`, 'not_regular', p);
  }
}

/**
 * Opens a file for synchronous reading only when it is a regular file: O_NONBLOCK so opening a
 * FIFO returns at once (and is then refused) instead of blocking the thread until a writer comes.
 */
export function openRegularSync(path: string): number {
  const fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
  const s = fstatSync(fd);
  if (!s.isFile()) {
    closeSync(fd);
    throw new FileAccessError(`${path} is ${fileKind(s)}, not a regular file`, 'not_regular', path);
  }
  return fd;
}

/** existsSync off the event loop. */
export const exists = (path: string): Promise<boolean> =>
  access(path).then(
    () => true,
    () => false,
  );

/** openRegularSync off the event loop: a file handle, only for a regular file. */
export async function openRegular(path: string): Promise<FileHandle> {
  const fh = await open(path, constants.O_RDONLY | constants.O_NONBLOCK);
  const s = await fh.stat();
  if (s.isFile()) return fh;
  await fh.close();
  throw new FileAccessError(`${path} is ${fileKind(s)}, not a regular file`, 'not_regular', path);
}

/**
 * A regular file's UTF-8 text, refused (too_large) when it holds more than maxBytes: a wrong or
 * hostile file is not read into memory, nor one that grows while it is read.
 */
export async function readRegularText(path: string, maxBytes: number): Promise<string> {
  const fh = await openRegular(path);
  try {
    const buf = sizedBuffer(path, (await fh.stat()).size, maxBytes);
    let n = 0;
    for (let got = 1; got > 0 && n < buf.length; n += got) got = (await fh.read(buf, n, buf.length - n, n)).bytesRead;
    return textOf(path, buf, n);
  } finally {
    await fh.close();
  }
}

/** readRegularText for start-up paths that are synchronous. */
export function readRegularTextSync(path: string, maxBytes: number): string {
  const fd = openRegularSync(path);
  try {
    const buf = sizedBuffer(path, fstatSync(fd).size, maxBytes);
    let n = 0;
    for (let got = 1; got > 0 && n < buf.length; n += got) got = readSync(fd, buf, n, buf.length - n, n);
    return textOf(path, buf, n);
  } finally {
    closeSync(fd);
  }
}

/** One byte of room past the size fstat saw: filling it means the file grew meanwhile. */
function sizedBuffer(path: string, size: number, maxBytes: number): Buffer {
  if (size > maxBytes)
    throw new FileAccessError(`${path} is ${size} bytes, over the ${mib(maxBytes)} it may take`, 'too_large', path);
  return Buffer.allocUnsafe(size + 1);
}

const mib = (n: number): string => (n % 2 ** 20 === 0 ? `${n / 2 ** 20} MiB` : `${n} bytes`);

function textOf(path: string, buf: Buffer, n: number): string {
  if (n === buf.length) throw new FileAccessError(`${path} grew while it was read`, 'too_large', path);
  return buf.toString('utf8', 0, n);
}

/** A JSON.parse failure without the text it quotes (the file may not be what it claims). */
export function jsonSyntax(e: unknown): string {
  const at = /position (\d+)/.exec((e as Error).message)?.[1];
  return at === undefined ? 'invalid JSON' : `invalid JSON at character ${at}`;
}
