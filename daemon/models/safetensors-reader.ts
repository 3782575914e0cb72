// Safetensors reader for TS tools and the float64 reference (the C++ engine has its own).
// Validates the header fully (sizes, dtypes, offsets, overlaps) and reads tensors on demand.
// A model folder is either one model.safetensors or shards listed in model.safetensors.index.json.
import { closeSync, existsSync, fstatSync, readFileSync, readSync } from 'node:fs';
import { join } from 'node:path';
import { jsonSyntax, openRegular, openRegularSync } from '../util/file-roots.js';

export const DTYPE_BYTES = {
  BOOL: 1,
  U8: 1,
  I8: 1,
  F8_E4M3: 1,
  F8_E5M2: 1,
  U16: 2,
  I16: 2,
  F16: 2,
  BF16: 2,
  U32: 4,
  I32: 4,
  F32: 4,
  U64: 8,
  I64: 8,
  F64: 8,
} as const;
export type SafetensorsDtype = keyof typeof DTYPE_BYTES;

export class SafetensorsError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SafetensorsError';
  }
}

export interface TensorInfo {
  name: string;
  dtype: SafetensorsDtype;
  shape: number[];
  /** Absolute byte range in the file. */
  begin: number;
  end: number;
  file: string;
}

const MAX_HEADER_BYTES = 100 * 1024 * 1024;

export class SafetensorsFile {
  private constructor(
    readonly path: string,
    private readonly fd: number,
    readonly tensors: Map<string, TensorInfo>,
    readonly metadata: Record<string, string>,
  ) {}

  static open(path: string): SafetensorsFile {
    const fd = openRegularSync(path);
    try {
      const size = fstatSync(fd).size;
      const first = Buffer.alloc(Math.min(8, size));
      readSync(fd, first, 0, first.length, 0);
      const headerLen = headerLength(path, size, first);
      const headerBuf = Buffer.alloc(headerLen);
      readSync(fd, headerBuf, 0, headerLen, 8);
      const { tensors, metadata } = parseHeader(path, size, headerBuf);
      return new SafetensorsFile(path, fd, tensors, metadata);
    } catch (e) {
      closeSync(fd);
      throw e;
    }
  }

  /** Reads a tensor's bytes (or a sub-range of them) into a fresh buffer. */
  read(name: string, from = 0, length?: number): Buffer {
    const info = this.tensors.get(name);
    if (!info) throw new SafetensorsError(`${this.path}: no tensor named ${name}`);
    const n = length ?? info.end - info.begin - from;
    if (from < 0 || n < 0 || info.begin + from + n > info.end) {
      throw new SafetensorsError(`${this.path}: range [${from}, ${from + n}) outside tensor ${name}`);
    }
    const buf = Buffer.alloc(n);
    let got = 0;
    while (got < n) {
      const r = readSync(this.fd, buf, got, n - got, info.begin + from + got);
      if (r === 0) throw new SafetensorsError(`${this.path}: unexpected end of file reading ${name}`);
      got += r;
    }
    return buf;
  }

  close(): void {
    closeSync(this.fd);
  }
}

/** The tensors of a file's header, read off the event loop (adapters: only the header is needed). */
export async function readSafetensorsHeader(path: string): Promise<SafetensorsHeader> {
  const fh = await openRegular(path);
  try {
    const size = (await fh.stat()).size;
    const first = Buffer.alloc(Math.min(8, size));
    await fh.read(first, 0, first.length, 0);
    const headerBuf = Buffer.alloc(headerLength(path, size, first));
    await fh.read(headerBuf, 0, headerBuf.length, 8);
    return parseHeader(path, size, headerBuf);
  } finally {
    await fh.close();
  }
}

export interface SafetensorsHeader {
  tensors: Map<string, TensorInfo>;
  metadata: Record<string, string>;
}

function failAt(path: string, why: string): never {
  throw new SafetensorsError(`${path}: ${why}`);
}

/** The header's length from the file's first 8 bytes, checked against the file's size. */
function headerLength(path: string, size: number, first: Buffer): number {
  if (size < 8) failAt(path, `file is ${size} bytes, shorter than the 8-byte header length`);
  const n = Number(first.readBigUInt64LE(0));
  // The length is the file's first 8 bytes: not echoed, the file may be anything.
  if (n > MAX_HEADER_BYTES || 8 + n > size)
    failAt(
      path,
      `header length (the first 8 bytes) runs past the end of the ${size}-byte file: not safetensors, or truncated`,
    );
  return n;
}

function parseHeader(path: string, size: number, headerBuf: Buffer): SafetensorsHeader {
  let header: unknown;
  try {
    header = JSON.parse(headerBuf.toString('utf8'));
  } catch (e) {
    failAt(path, `header is not valid JSON (${jsonSyntax(e)})`);
  }
  if (typeof header !== 'object' || header === null || Array.isArray(header))
    failAt(path, 'header is not a JSON object');
  const dataStart = 8 + headerBuf.length;
  return parseEntries(header as Record<string, unknown>, size - dataStart, dataStart, path);
}

function parseEntries(
  header: Record<string, unknown>,
  dataSize: number,
  dataStart: number,
  path: string,
): { tensors: Map<string, TensorInfo>; metadata: Record<string, string> } {
  const tensors = new Map<string, TensorInfo>();
  let metadata: Record<string, string> = {};
  const fail = (why: string): never => {
    throw new SafetensorsError(`${path}: ${why}`);
  };
  for (const [name, raw] of Object.entries(header)) {
    if (name === '__metadata__') {
      metadata = raw as Record<string, string>;
      continue;
    }
    const e = raw as { dtype?: unknown; shape?: unknown; data_offsets?: unknown };
    if (typeof e !== 'object' || e === null) fail(`tensor ${name}: entry is not an object`);
    if (typeof e.dtype !== 'string' || !(e.dtype in DTYPE_BYTES))
      fail(`tensor ${name}: unknown dtype ${JSON.stringify(e.dtype)}`);
    const dtype = e.dtype as SafetensorsDtype;
    const shape = e.shape;
    if (!Array.isArray(shape) || !shape.every((d) => Number.isSafeInteger(d) && d >= 0)) {
      fail(`tensor ${name}: shape must be a list of non-negative integers, got ${JSON.stringify(shape)}`);
    }
    const off = e.data_offsets;
    if (
      !Array.isArray(off) ||
      off.length !== 2 ||
      !off.every((o) => Number.isSafeInteger(o) && o >= 0) ||
      off[0] > off[1]
    ) {
      fail(`tensor ${name}: data_offsets must be [begin, end] with 0 <= begin <= end, got ${JSON.stringify(off)}`);
    }
    const [b, en] = off as [number, number];
    if (en > dataSize) fail(`tensor ${name}: data_offsets [${b}, ${en}] run past the ${dataSize} data bytes`);
    const need = (shape as number[]).reduce((n, d) => n * d, 1) * DTYPE_BYTES[dtype];
    if (need !== en - b)
      fail(`tensor ${name}: shape ${JSON.stringify(shape)} of ${dtype} needs ${need} bytes, offsets give ${en - b}`);
    tensors.set(name, { name, dtype, shape: shape as number[], begin: dataStart + b, end: dataStart + en, file: path });
  }
  const sorted = [...tensors.values()].sort((x, y) => x.begin - y.begin);
  for (let i = 1; i < sorted.length; i++) {
    if (sorted[i].begin < sorted[i - 1].end) fail(`tensors ${sorted[i - 1].name} and ${sorted[i].name} overlap`);
  }
  return { tensors, metadata };
}

/** All tensors of a model folder, sharded or not. */
export class SafetensorsModel {
  private constructor(
    readonly dir: string,
    private readonly files: Map<string, SafetensorsFile>,
    private readonly where: Map<string, SafetensorsFile>,
  ) {}

  static open(dir: string): SafetensorsModel {
    const indexPath = join(dir, 'model.safetensors.index.json');
    const fileNames: string[] = [];
    let weightMap: Record<string, string> | undefined;
    if (existsSync(indexPath)) {
      let index: { weight_map?: Record<string, string> };
      try {
        index = JSON.parse(readFileSync(indexPath, 'utf8'));
      } catch (e) {
        throw new SafetensorsError(`${indexPath}: not valid JSON (${jsonSyntax(e)})`);
      }
      if (typeof index.weight_map !== 'object' || index.weight_map === null) {
        throw new SafetensorsError(`${indexPath}: weight_map is missing`);
      }
      weightMap = index.weight_map;
      fileNames.push(...new Set(Object.values(weightMap)));
    } else if (existsSync(join(dir, 'model.safetensors'))) {
      fileNames.push('model.safetensors');
    } else {
      throw new SafetensorsError(`${dir}: neither model.safetensors.index.json nor model.safetensors exists`);
    }
    const files = new Map<string, SafetensorsFile>();
    const where = new Map<string, SafetensorsFile>();
    try {
      for (const f of fileNames) {
        if (f.includes('/') || f.includes('\\'))
          throw new SafetensorsError(`${indexPath}: shard name ${f} is not a plain file name`);
        const file = SafetensorsFile.open(join(dir, f));
        files.set(f, file);
        for (const name of file.tensors.keys()) {
          if (where.has(name)) throw new SafetensorsError(`${dir}: tensor ${name} appears in two shards`);
          where.set(name, file);
        }
      }
      for (const [name, f] of Object.entries(weightMap ?? {})) {
        if (where.get(name) !== files.get(f)) {
          throw new SafetensorsError(`${indexPath}: weight_map puts ${name} in ${f}, which does not contain it`);
        }
      }
    } catch (e) {
      for (const file of files.values()) file.close();
      throw e;
    }
    return new SafetensorsModel(dir, files, where);
  }

  names(): string[] {
    return [...this.where.keys()];
  }

  has(name: string): boolean {
    return this.where.has(name);
  }

  info(name: string): TensorInfo {
    const f = this.where.get(name);
    if (!f) throw new SafetensorsError(`${this.dir}: missing tensor ${name}`);
    return f.tensors.get(name)!;
  }

  read(name: string, from = 0, length?: number): Buffer {
    const f = this.where.get(name);
    if (!f) throw new SafetensorsError(`${this.dir}: missing tensor ${name}`);
    return f.read(name, from, length);
  }

  close(): void {
    for (const f of this.files.values()) f.close();
  }
}
