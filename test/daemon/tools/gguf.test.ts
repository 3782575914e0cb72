import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { quantizeRowQ4_0, quantizeRowQ8_0 } from '../../../daemon/tools/gguf-writer.js';
import { exportGguf } from '../../../daemon/tools/gguf-export.js';
import { f16ToNumber, numberToF16 } from '../../../daemon/models/float16.js';
import { synthModel } from '../../../daemon/tools/synth.js';
import { readRefConfig } from '../../../daemon/tools/reference/model-config.js';
import { RefWeights } from '../../../daemon/tools/reference/weights.js';
import { Prng } from '../../../robot/common/prng.js';

/** Minimal independent GGUF v3 parser: key/values, tensor infos, data start. */
function parseGguf(buf: Buffer) {
  let o = 0;
  const u32 = () => ((o += 4), buf.readUInt32LE(o - 4));
  const u64 = () => ((o += 8), Number(buf.readBigUInt64LE(o - 8)));
  const str = () => {
    const n = u64();
    o += n;
    return buf.toString('utf8', o - n, o);
  };
  const value = (t: number): unknown => {
    switch (t) {
      case 4:
        return u32();
      case 5:
        return ((o += 4), buf.readInt32LE(o - 4));
      case 6:
        return ((o += 4), buf.readFloatLE(o - 4));
      case 7:
        return ((o += 1), buf[o - 1] !== 0);
      case 8:
        return str();
      case 9: {
        const et = u32();
        return Array.from({ length: u64() }, () => value(et));
      }
      default:
        throw new Error(`unexpected gguf value type ${t}`);
    }
  };
  assert.equal(buf.toString('ascii', 0, 4), 'GGUF');
  o = 4;
  assert.equal(u32(), 3);
  const nTensors = u64();
  const nKv = u64();
  const kv = new Map<string, unknown>();
  for (let i = 0; i < nKv; i++) {
    const k = str();
    kv.set(k, value(u32()));
  }
  const tensors = Array.from({ length: nTensors }, () => {
    const name = str();
    const dims = Array.from({ length: u32() }, () => u64());
    return { name, dims, type: u32(), offset: u64() };
  });
  const dataStart = Math.ceil(o / 32) * 32;
  return { kv, tensors, dataStart };
}

let root = '';
before(() => {
  root = mkdtempSync(join(tmpdir(), 'brainstem-gguf-'));
});
after(() => rmSync(root, { recursive: true, force: true }));

test('Q4_0 hand cases: d = signed max / -8, low nibbles hold elements 0..15, clamp at 15', () => {
  const out = new Uint8Array(18);
  const x = [...Array(16).keys()].map((i) => i - 8).concat(new Array(16).fill(0));
  quantizeRowQ4_0(x, out, numberToF16);
  assert.equal(out[0] | (out[1] << 8), 0x3c00); // d = -8 / -8 = 1
  assert.deepEqual(
    Array.from(out.subarray(2)),
    [...Array(16).keys()].map((j) => j | (8 << 4)),
  );
  const y = [8, -8, ...new Array(30).fill(0)];
  quantizeRowQ4_0(y, out, numberToF16);
  assert.equal(f16ToNumber(out[0] | (out[1] << 8)), -1); // max 8 → d = -1
  assert.equal(out[2] & 15, 0); // 8 * -1 + 8.5 → 0
  assert.equal(out[3] & 15, 15); // -8 * -1 + 8.5 = 16.5 → clamped to 15
});

test('Q8_0 hand cases: d = max|x| / 127, q = round(x / d) with halves away from zero', () => {
  const out = new Uint8Array(34);
  const x = [127, -127, 63.5, -63.5, 0.5, -0.49, ...new Array(26).fill(0)];
  quantizeRowQ8_0(x, out, numberToF16);
  assert.equal(out[0] | (out[1] << 8), 0x3c00); // d = 127 / 127 = 1
  const q = Array.from(new Int8Array(out.buffer, 2, 32));
  assert.deepEqual(q.slice(0, 7), [127, -127, 64, -64, 1, 0, 0]);
  const y = [-254, 2, ...new Array(30).fill(0)];
  quantizeRowQ8_0(y, out, numberToF16);
  assert.equal(f16ToNumber(out[0] | (out[1] << 8)), 2); // max |x| 254 → d = 2, sign in the codes
  assert.deepEqual(Array.from(new Int8Array(out.buffer, 2, 2)), [-127, 1]);
  quantizeRowQ8_0(new Array(32).fill(0), out, numberToF16);
  assert.ok(
    out.every((b) => b === 0),
    'a zero block is d = 0 and zero codes',
  );
});

test('Q8_0 round trip error is at most half a step (seed 14)', () => {
  const rng = new Prng(14);
  const x = Array.from({ length: 32 * 64 }, () => rng.normal());
  const out = new Uint8Array(34 * 64);
  quantizeRowQ8_0(x, out, numberToF16);
  const codes = new Int8Array(out.buffer);
  for (let b = 0; b < 64; b++) {
    const d = f16ToNumber(out[34 * b] | (out[34 * b + 1] << 8));
    for (let j = 0; j < 32; j++) {
      const err = Math.abs(codes[34 * b + 2 + j] * d - x[32 * b + j]);
      // Half a step of the float32 d, plus d's rounding to f16 (2^-11 relative) times |q| ≤ 127.
      assert.ok(err <= d * (0.5 + 127 * 2 ** -11) * 1.001, `block ${b} j ${j}: err ${err} d ${d}`);
    }
  }
});

test('Q4_0 round trip error is at most one step (seed 13)', () => {
  const rng = new Prng(13);
  const x = Array.from({ length: 32 * 64 }, () => rng.normal());
  const out = new Uint8Array(18 * 64);
  quantizeRowQ4_0(x, out, numberToF16);
  for (let b = 0; b < 64; b++) {
    const d = f16ToNumber(out[18 * b] | (out[18 * b + 1] << 8));
    for (let j = 0; j < 32; j++) {
      const byte = out[18 * b + 2 + (j % 16)];
      const q = j < 16 ? byte & 15 : byte >> 4;
      const err = Math.abs((q - 8) * d - x[32 * b + j]);
      assert.ok(err <= Math.abs(d) * 1.001, `block ${b} j ${j}: err ${err} d ${d}`);
    }
  }
});

test('qwen3moe GGUF (f32): llama.cpp keys, tensor names and shapes, tokenizer, exact dequantised values', () => {
  const dir = synthModel({ arch: 'qwen3_moe', shape: 'tiny', seed: 3, out: join(root, 'q') }).dir;
  const file = join(root, 'q.gguf');
  const size = exportGguf(dir, file, 'f32');
  const buf = readFileSync(file);
  assert.equal(size, buf.length);
  const g = parseGguf(buf);
  const expectKv: [string, unknown][] = [
    ['general.architecture', 'qwen3moe'],
    ['general.file_type', 0],
    ['qwen3moe.context_length', 40960],
    ['qwen3moe.block_count', 4],
    ['qwen3moe.embedding_length', 128],
    ['qwen3moe.attention.head_count', 4],
    ['qwen3moe.attention.head_count_kv', 2],
    ['qwen3moe.attention.key_length', 32],
    ['qwen3moe.expert_count', 16],
    ['qwen3moe.expert_used_count', 4],
    ['qwen3moe.expert_feed_forward_length', 128],
    ['qwen3moe.rope.dimension_count', 32],
    ['qwen3moe.rope.freq_base', 1e6],
    ['tokenizer.ggml.model', 'gpt2'],
    ['tokenizer.ggml.pre', 'qwen2'],
    ['tokenizer.ggml.eos_token_id', 602],
    ['tokenizer.ggml.padding_token_id', 600],
    ['tokenizer.ggml.add_bos_token', false],
  ];
  for (const [k, v] of expectKv) assert.equal(g.kv.get(k), v, k);
  const tokens = g.kv.get('tokenizer.ggml.tokens') as string[];
  const types = g.kv.get('tokenizer.ggml.token_type') as number[];
  assert.equal(tokens.length, 640);
  assert.deepEqual(
    [tokens[600], types[600], tokens[614], types[614], tokens[639], types[639], types[10]],
    ['<|endoftext|>', 3, '<tool_call>', 4, '[PAD639]', 5, 1],
  );
  assert.equal((g.kv.get('tokenizer.ggml.merges') as string[]).length, 344);
  const byName = new Map(g.tensors.map((t) => [t.name, t]));
  const expectT: [string, number[], number][] = [
    ['token_embd.weight', [128, 640], 0],
    ['output.weight', [128, 640], 0],
    ['output_norm.weight', [128], 0],
    ['blk.0.attn_q.weight', [128, 128], 0],
    ['blk.0.attn_k.weight', [128, 64], 0],
    ['blk.0.attn_output.weight', [128, 128], 0],
    ['blk.0.attn_q_norm.weight', [32], 0],
    ['blk.0.ffn_norm.weight', [128], 0],
    ['blk.0.ffn_gate_inp.weight', [128, 16], 0],
    ['blk.3.ffn_gate_exps.weight', [128, 128, 16], 0],
    ['blk.3.ffn_down_exps.weight', [128, 128, 16], 0],
  ];
  for (const [name, dims, type] of expectT)
    assert.deepEqual([byName.get(name)?.dims, byName.get(name)?.type], [dims, type], name);
  assert.equal(g.tensors.length, 3 + 4 * 12);
  for (const t of g.tensors) assert.equal(t.offset % 32, 0, t.name);
  const last = g.tensors.at(-1)!;
  assert.equal(buf.length, g.dataStart + last.offset + last.dims.reduce((a, b) => a * b) * 4);
  // The data is the dequantised MLX weight, exactly (in f32): check one expert row.
  const c = readRefConfig(dir);
  const w = RefWeights.open(dir, c);
  const row = w.matrix('model.layers.3.mlp.switch_mlp.down_proj', 7).row(5);
  const t = byName.get('blk.3.ffn_down_exps.weight')!;
  const at = g.dataStart + t.offset + (7 * 128 + 5) * 128 * 4;
  for (let i = 0; i < 128; i++) assert.equal(buf.readFloatLE(at + 4 * i), Math.fround(row[i]));
  w.close();
});

test('glm4moe GGUF (q4_0): group, shared-expert and dense-layer keys, F32 routers/biases, Q4_0 matrices', () => {
  const dir = synthModel({ arch: 'glm4_moe', shape: 'tiny', seed: 3, out: join(root, 'g') }).dir;
  const file = join(root, 'g.gguf');
  exportGguf(dir, file, 'q4_0');
  const g = parseGguf(readFileSync(file));
  const expectKv: [string, unknown][] = [
    ['general.architecture', 'glm4moe'],
    ['general.file_type', 2],
    ['glm4moe.context_length', 131072],
    ['glm4moe.rope.dimension_count', 16],
    ['glm4moe.expert_shared_count', 1],
    ['glm4moe.leading_dense_block_count', 1],
    ['glm4moe.expert_gating_func', 2],
    ['glm4moe.expert_weights_scale', 2.5],
    ['glm4moe.expert_weights_norm', true],
    ['glm4moe.expert_group_count', 4],
    ['glm4moe.expert_group_used_count', 2],
    ['glm4moe.nextn_predict_layers', 0],
    ['glm4moe.feed_forward_length', 256],
  ];
  for (const [k, v] of expectKv) assert.equal(g.kv.get(k), v, k);
  const byName = new Map(g.tensors.map((t) => [t.name, t]));
  const expectT: [string, number[], number][] = [
    ['blk.0.ffn_gate.weight', [128, 256], 2],
    ['blk.0.post_attention_norm.weight', [128], 0],
    ['blk.0.attn_q.bias', [128], 0],
    ['blk.1.ffn_gate_inp.weight', [128, 16], 0],
    ['blk.1.exp_probs_b.bias', [16], 0],
    ['blk.1.ffn_up_exps.weight', [128, 128, 16], 2],
    ['blk.1.ffn_down_shexp.weight', [128, 128], 2],
    ['token_embd.weight', [128, 640], 2],
  ];
  for (const [name, dims, type] of expectT)
    assert.deepEqual([byName.get(name)?.dims, byName.get(name)?.type], [dims, type], name);
  assert.ok(!byName.has('blk.0.attn_q_norm.weight') && !byName.has('blk.0.ffn_gate_inp.weight'));
});

test('qwen3moe GGUF (q8_0) of an 8-bit model: file type 7, Q8_0 matrices holding each MLX row requantised', () => {
  const dir = synthModel({ arch: 'qwen3_moe', shape: 'tiny', seed: 4, bits: 8, out: join(root, 'q8') }).dir;
  const file = join(root, 'q8.gguf');
  exportGguf(dir, file, 'q8_0');
  const buf = readFileSync(file);
  const g = parseGguf(buf);
  assert.equal(g.kv.get('general.file_type'), 7);
  const byName = new Map(g.tensors.map((t) => [t.name, t]));
  for (const [name, dims, type] of [
    ['blk.0.attn_q.weight', [128, 128], 8],
    ['blk.2.ffn_down_exps.weight', [128, 128, 16], 8],
    ['blk.2.ffn_gate_inp.weight', [128, 16], 0],
    ['output_norm.weight', [128], 0],
  ] as [string, number[], number][])
    assert.deepEqual([byName.get(name)?.dims, byName.get(name)?.type], [dims, type], name);
  // Expert 7's row 5 of layer 2's down projection: 128 columns = 4 blocks of 34 bytes.
  const c = readRefConfig(dir);
  const w = RefWeights.open(dir, c);
  const want = new Uint8Array(4 * 34);
  quantizeRowQ8_0(w.matrix('model.layers.2.mlp.switch_mlp.down_proj', 7).row(5), want, numberToF16);
  w.close();
  const at = g.dataStart + byName.get('blk.2.ffn_down_exps.weight')!.offset + (7 * 128 + 5) * 4 * 34;
  assert.deepEqual(new Uint8Array(buf.subarray(at, at + 4 * 34)), want);
});

test('qwen3_moe with dense layers cannot be expressed for llama.cpp and says why', () => {
  const dir = synthModel({ arch: 'qwen3_moe', shape: 'tiny', out: join(root, 'd'), mlpOnlyLayers: [2] }).dir;
  assert.throws(
    () => exportGguf(dir, join(root, 'd.gguf'), 'f16'),
    /llama.cpp's qwen3moe has no dense layers, but config.json makes layers 2 dense/,
  );
});
