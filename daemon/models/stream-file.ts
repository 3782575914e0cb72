// Writes a file as a header followed by parts whose bytes are pulled chunk by chunk (shared by
// the safetensors and GGUF writers, so multi-GB files never sit in memory).
import { closeSync, openSync, writeSync } from 'node:fs';

export interface StreamedPart {
  name: string;
  /** Exact byte count the chunks must add up to. */
  bytes: number;
  chunks(): Iterable<Uint8Array>;
  /** Zero bytes written after the part (alignment). */
  padding?: number;
}

/** Writes header + parts; returns the file size. `format` names the file kind in errors. */
export function writeStreamed(
  path: string,
  header: Uint8Array,
  parts: readonly StreamedPart[],
  format: string,
): number {
  const fd = openSync(path, 'w');
  try {
    let written = writeAll(fd, header);
    for (const p of parts) {
      let got = 0;
      for (const chunk of p.chunks()) got += writeAll(fd, chunk);
      if (got !== p.bytes)
        throw new Error(`${format}: tensor ${p.name} produced ${got} bytes, its shape needs ${p.bytes}`);
      written += got + writeAll(fd, new Uint8Array(p.padding ?? 0));
    }
    return written;
  } finally {
    closeSync(fd);
  }
}

function writeAll(fd: number, bytes: Uint8Array): number {
  let off = 0;
  while (off < bytes.length) off += writeSync(fd, bytes, off, bytes.length - off);
  return bytes.length;
}
