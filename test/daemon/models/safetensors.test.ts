import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { safetensorsHeader, writeSafetensors, type TensorSource } from '../../../daemon/models/safetensors-writer.js';
import { SafetensorsFile, SafetensorsModel } from '../../../daemon/models/safetensors-reader.js';
import { Prng } from '../../../robot/common/prng.js';

const tmp = (): string => mkdtempSync(join(tmpdir(), 'brainstem-st-'));

function source(
  name: string,
  dtype: TensorSource['dtype'],
  shape: number[],
  bytes: Uint8Array,
  pieces = 3,
): TensorSource {
  return {
    name,
    dtype,
    shape,
    *chunks() {
      const step = Math.ceil(bytes.length / pieces) || 1;
      for (let o = 0; o < bytes.length; o += step) yield bytes.subarray(o, o + step);
    },
  };
}

test('writer/reader round trip: dtypes, shapes, metadata, chunked data (seed 9)', () => {
  const dir = tmp();
  try {
    const rng = new Prng(9);
    const specs: [string, TensorSource['dtype'], number[]][] = [
      ['a.weight', 'U32', [3, 5]],
      ['a.scales', 'BF16', [3, 1]],
      ['b', 'F32', [7]],
      ['c', 'F16', [2, 2, 2]],
      ['empty', 'F32', [0, 4]],
      ['d', 'U8', [13]],
      ['e', 'I32', [1]],
    ];
    const data = new Map<string, Uint8Array>();
    const sources = specs.map(([name, dtype, shape]) => {
      const n = shape.reduce((a, b) => a * b, 1) * { U32: 4, BF16: 2, F32: 4, F16: 2, U8: 1, I32: 4 }[dtype as 'U32'];
      const bytes = Uint8Array.from({ length: n }, () => rng.int(256));
      data.set(name, bytes);
      return source(name, dtype, shape, bytes);
    });
    const path = join(dir, 'x.safetensors');
    const size = writeSafetensors(path, sources, { format: 'mlx' });
    const raw = readFileSync(path);
    assert.equal(size, raw.length);
    const headerLen = Number(raw.readBigUInt64LE(0));
    assert.equal(headerLen % 8, 0, 'header padded to 8 bytes');
    const f = SafetensorsFile.open(path);
    assert.deepEqual(f.metadata, { format: 'mlx' });
    for (const [name, dtype, shape] of specs) {
      const info = f.tensors.get(name)!;
      assert.equal(info.dtype, dtype);
      assert.deepEqual(info.shape, shape);
      assert.deepEqual(new Uint8Array(f.read(name)), data.get(name), name);
    }
    assert.deepEqual(new Uint8Array(f.read('a.weight', 4, 8)), data.get('a.weight')!.subarray(4, 12));
    assert.throws(() => f.read('a.weight', 56, 8), /outside tensor a.weight/);
    f.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('writer rejects a producer with the wrong byte count and duplicate names', () => {
  const dir = tmp();
  try {
    assert.throws(
      () => writeSafetensors(join(dir, 'x.safetensors'), [source('t', 'F32', [4], new Uint8Array(12))]),
      /tensor t produced 12 bytes, its shape needs 16/,
    );
    assert.throws(
      () =>
        safetensorsHeader([
          { name: 'x', dtype: 'F32', shape: [1] },
          { name: 'x', dtype: 'F32', shape: [1] },
        ]),
      /duplicate/,
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

function fileWithHeader(dir: string, header: unknown, dataBytes: number, lengthOverride?: number): string {
  const json = Buffer.from(typeof header === 'string' ? header : JSON.stringify(header));
  const buf = Buffer.alloc(8 + json.length + dataBytes);
  buf.writeBigUInt64LE(BigInt(lengthOverride ?? json.length), 0);
  json.copy(buf, 8);
  const p = join(dir, `m${Math.random().toString(36).slice(2)}.safetensors`);
  writeFileSync(p, buf);
  return p;
}

test('malformed files give errors that name the problem', () => {
  const dir = tmp();
  try {
    const ok = { t: { dtype: 'F32', shape: [2], data_offsets: [0, 8] } };
    const cases: [string, string][] = [
      [fileWithHeader(dir, ok, 8, 1 << 30), 'header length (the first 8 bytes) runs past the end of the'],
      [fileWithHeader(dir, '{"t": [', 0), 'header is not valid JSON'],
      [
        fileWithHeader(dir, { t: { dtype: 'Q7', shape: [2], data_offsets: [0, 8] } }, 8),
        'tensor t: unknown dtype "Q7"',
      ],
      [
        fileWithHeader(dir, { t: { dtype: 'F32', shape: [2], data_offsets: [0, 16] } }, 8),
        'data_offsets [0, 16] run past the 8 data bytes',
      ],
      [
        fileWithHeader(dir, { t: { dtype: 'F32', shape: [3], data_offsets: [0, 8] } }, 8),
        'shape [3] of F32 needs 12 bytes, offsets give 8',
      ],
      [
        fileWithHeader(dir, { t: { dtype: 'F32', shape: [-1], data_offsets: [0, 8] } }, 8),
        'shape must be a list of non-negative integers',
      ],
      [
        fileWithHeader(dir, { t: { dtype: 'F32', shape: [2], data_offsets: [8, 0] } }, 8),
        'data_offsets must be [begin, end]',
      ],
      [
        fileWithHeader(
          dir,
          {
            a: { dtype: 'F32', shape: [2], data_offsets: [0, 8] },
            b: { dtype: 'F32', shape: [2], data_offsets: [4, 12] },
          },
          12,
        ),
        'tensors a and b overlap',
      ],
    ];
    for (const [path, message] of cases)
      assert.throws(
        () => SafetensorsFile.open(path),
        (e: Error) => e.message.includes(message),
        message,
      );
    const short = join(dir, 'short.safetensors');
    writeFileSync(short, Buffer.alloc(5));
    assert.throws(() => SafetensorsFile.open(short), /shorter than the 8-byte header length/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('sharded folder: index maps tensors to shards; a wrong map or missing folder is reported', () => {
  const dir = tmp();
  try {
    writeSafetensors(join(dir, 'model-00001-of-00002.safetensors'), [source('x', 'F32', [1], new Uint8Array(4))]);
    writeSafetensors(join(dir, 'model-00002-of-00002.safetensors'), [source('y', 'F32', [1], new Uint8Array(4))]);
    const index = {
      metadata: { total_size: 8 },
      weight_map: { x: 'model-00001-of-00002.safetensors', y: 'model-00002-of-00002.safetensors' },
    };
    writeFileSync(join(dir, 'model.safetensors.index.json'), JSON.stringify(index));
    const m = SafetensorsModel.open(dir);
    assert.deepEqual(m.names().sort(), ['x', 'y']);
    assert.equal(m.info('y').file, join(dir, 'model-00002-of-00002.safetensors'));
    assert.throws(() => m.read('z'), /missing tensor z/);
    m.close();
    index.weight_map.y = 'model-00001-of-00002.safetensors';
    writeFileSync(join(dir, 'model.safetensors.index.json'), JSON.stringify(index));
    assert.throws(
      () => SafetensorsModel.open(dir),
      /weight_map puts y in model-00001-of-00002.safetensors, which does not contain it/,
    );
    assert.throws(
      () => SafetensorsModel.open(join(dir, 'nowhere')),
      /neither model.safetensors.index.json nor model.safetensors exists/,
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
