// Streaming safetensors writer: the header is computed from shapes alone, then each tensor's
// bytes are pulled chunk by chunk, so multi-GB shards never sit in memory.
// Format: u64 LE header length, JSON header padded with spaces to 8 bytes, raw data.
import { writeStreamed } from './stream-file.js';
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
  const parts = tensors.map((t) => ({
    name: t.name,
    bytes: tensorByteLength(t.dtype, t.shape),
    chunks: () => t.chunks(),
  }));
  return writeStreamed(path, safetensorsHeader(tensors, metadata), parts, 'safetensors');
}
