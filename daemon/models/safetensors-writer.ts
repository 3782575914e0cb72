// Streaming safetensors writer: the header is computed from shapes alone, then each tensor's
// bytes are pulled chunk by chunk, so multi-GB shards never sit in memory.
// Format: u64 LE header length, JSON header padded with spaces to 8 bytes, raw data.
import { closeSync, openSync, writeSync } from 'node:fs';
import { DTYPE_BYTES, type SafetensorsDtype } from './safetensors-reader.js';

export interface TensorSource {
  name: string;
  dtype: SafetensorsDtype;
  shape: number[];
  /** Yields the tensor's bytes in order; their total must equal its byte length. */
  chunks(): Iterable<Uint8Array>;
}

export function tensorByteLength(dtype: SafetensorsDtype, shape: readonly number[]): number {
  return shape.reduce((n, d) => n * d, 1) * DTYPE_BYTES[dtype];
}

/** Header bytes (length prefix included) for tensors stored back to back in the given order. */
export function safetensorsHeader(
  tensors: readonly Pick<TensorSource, 'name' | 'dtype' | 'shape'>[],
  metadata: Record<string, string> = {},
): Uint8Array {
  const header: Record<string, unknown> = {};
  if (Object.keys(metadata).length > 0) header.__metadata__ = metadata;
  let offset = 0;
  for (const t of tensors) {
    if (t.name in header) throw new Error(`safetensors: duplicate tensor name ${t.name}`);
    const end = offset + tensorByteLength(t.dtype, t.shape);
    header[t.name] = { dtype: t.dtype, shape: t.shape, data_offsets: [offset, end] };
    offset = end;
  }
  const json = Buffer.from(JSON.stringify(header), 'utf8');
  const padded = Math.ceil(json.length / 8) * 8;
  const out = Buffer.alloc(8 + padded, 0x20);
  out.writeBigUInt64LE(BigInt(padded), 0);
  json.copy(out, 8);
  return out;
}

/** Writes one safetensors file; returns its size in bytes. */
export function writeSafetensors(
  path: string,
  tensors: readonly TensorSource[],
  metadata: Record<string, string> = {},
): number {
  const fd = openSync(path, 'w');
  try {
    const header = safetensorsHeader(tensors, metadata);
    let written = writeAll(fd, header);
    for (const t of tensors) {
      const expected = tensorByteLength(t.dtype, t.shape);
      let got = 0;
      for (const chunk of t.chunks()) got += writeAll(fd, chunk);
      if (got !== expected) {
        throw new Error(`safetensors: tensor ${t.name} produced ${got} bytes, its shape needs ${expected}`);
      }
      written += got;
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
