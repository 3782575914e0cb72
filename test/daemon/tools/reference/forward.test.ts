import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { synthModel } from '../../../../daemon/tools/synth.js';
import { SafetensorsModel } from '../../../../daemon/models/safetensors-reader.js';
import { writeSafetensors } from '../../../../daemon/models/safetensors-writer.js';
import { dequantizeAffine, type QuantBits, type QuantGroup } from '../../../../daemon/models/mlx-quant.js';
import { bf16ToNumber } from '../../../../daemon/models/float16.js';
import { referenceForward, referenceGreedy } from '../../../../daemon/tools/reference/forward.js';

let root = '';
const dirs: Record<string, string> = {};
before(() => {
  root = mkdtempSync(join(tmpdir(), 'brainstem-ref-'));
  for (const arch of ['qwen3_moe', 'glm4_moe'] as const)
    dirs[arch] = synthModel({ arch, shape: 'tiny', seed: 8, out: join(root, arch) }).dir;
});
after(() => rmSync(root, { recursive: true, force: true }));

/** Copy of a model folder with the quantised modules matching `zero` set to all-zero weights. */
function zeroed(src: string, name: string, zero: RegExp): string {
  const dst = join(root, name);
  mkdirSync(dst);
  for (const f of ['config.json', 'tokenizer.json', 'tokenizer_config.json']) copyFileSync(join(src, f), join(dst, f));
  const m = SafetensorsModel.open(src);
  const tensors = m.names().map((n) => {
    const info = m.info(n);
    const bytes =
      zero.test(n) && /\.(scales|biases)$/.test(n) ? new Uint8Array(info.end - info.begin) : new Uint8Array(m.read(n));
    return { name: n, dtype: info.dtype, shape: info.shape, chunks: () => [bytes] };
  });
  writeSafetensors(join(dst, 'model.safetensors'), tensors, { format: 'mlx' });
  m.close();
  return dst;
}

/** Independent dequantisation: raw bytes → mlx-quant's dequantizeAffine, rows of float64. */
function dense(dir: string, path: string, bits = 4, group = 64): Float64Array[] {
  const m = SafetensorsModel.open(dir);
  const w = m.read(`${path}.weight`);
  const [rows] = m.info(`${path}.weight`).shape;
  const bf = (n: string) =>
    Float32Array.from({ length: m.info(n).shape.reduce((a, b) => a * b) }, (_, i) =>
      bf16ToNumber(m.read(n).readUInt16LE(2 * i)),
    );
  const q = {
    rows,
    cols: (w.length * 8) / bits / rows,
    bits: bits as QuantBits,
    groupSize: group as QuantGroup,
    weight: new Uint32Array(w.buffer.slice(w.byteOffset, w.byteOffset + w.length)),
    scales: bf(`${path}.scales`),
    biases: bf(`${path}.biases`),
  };
  const flat = dequantizeAffine(q);
  m.close();
  return Array.from({ length: rows }, (_, r) => flat.subarray(r * q.cols, (r + 1) * q.cols));
}

function vector(dir: string, name: string): Float64Array {
  const m = SafetensorsModel.open(dir);
  const b = m.read(name);
  m.close();
  return Float64Array.from({ length: b.length / 2 }, (_, i) => bf16ToNumber(b.readUInt16LE(2 * i)));
}

const mv = (rows: Float64Array[], x: Float64Array) =>
  Float64Array.from(rows, (r) => r.reduce((s, v, i) => s + v * x[i], 0));
const norm = (x: Float64Array, w: Float64Array, eps: number) => {
  const inv = 1 / Math.sqrt(x.reduce((s, v) => s + v * v, 0) / x.length + eps);
  return x.map((v, i) => v * inv * w[i]);
};
const maxDiff = (a: Float64Array, b: Float64Array) => a.reduce((m, v, i) => Math.max(m, Math.abs(v - b[i])), 0);

for (const arch of ['qwen3_moe', 'glm4_moe'] as const) {
  const eps = arch === 'qwen3_moe' ? 1e-6 : 1e-5;

  test(`${arch}: with attention and MLP outputs zeroed, logits = lm_head(norm(embed[t])) by hand`, () => {
    const dir = zeroed(dirs[arch], `${arch}-inert`, /o_proj|down_proj/);
    const embed = dense(dir, 'model.embed_tokens');
    const head = dense(dir, 'lm_head');
    const model = referenceForward(dir);
    for (const t of [0, 17, 601]) {
      const expected = mv(head, norm(embed[t], vector(dir, 'model.norm.weight'), eps));
      assert.ok(maxDiff(model.decode(t), expected) < 1e-9, `token ${t}`);
    }
    model.close();
  });

  test(`${arch}: one token through attention only (MLPs zeroed) matches a hand GQA pass`, () => {
    const dir = zeroed(dirs[arch], `${arch}-attn`, /down_proj/);
    const layers = 4;
    const heads = 4;
    const kvHeads = 2;
    const hd = 32;
    let h = dense(dir, 'model.embed_tokens')[42].slice();
    for (let l = 0; l < layers; l++) {
      const p = `model.layers.${l}`;
      const x = norm(h, vector(dir, `${p}.input_layernorm.weight`), eps);
      const v = mv(dense(dir, `${p}.self_attn.v_proj`), x);
      if (arch === 'glm4_moe') vector(dir, `${p}.self_attn.v_proj.bias`).forEach((b, i) => (v[i] += b));
      // One position: softmax over one score is 1, so head i outputs v of kv head i / (heads / kvHeads).
      const o = new Float64Array(heads * hd);
      for (let i = 0; i < heads; i++) o.set(v.subarray((i >> 1) * hd, ((i >> 1) + 1) * hd), i * hd);
      assert.equal(heads / kvHeads, 2);
      const attn = mv(dense(dir, `${p}.self_attn.o_proj`), o);
      h = h.map((val, i) => val + attn[i]);
    }
    const expected = mv(dense(dir, 'lm_head'), norm(h, vector(dir, 'model.norm.weight'), eps));
    const model = referenceForward(dir);
    assert.ok(maxDiff(model.decode(42), expected) < 1e-9);
    model.close();
  });

  test(`${arch}: prefill = token-by-token decode; truncate replays exactly; greedy is deterministic`, () => {
    const a = referenceForward(dirs[arch]);
    const b = referenceForward(dirs[arch]);
    const prompt = [5, 99, 300, 7, 12, 450];
    const la = a.prefill(prompt);
    let lb: Float64Array = new Float64Array(0);
    for (const t of prompt) lb = b.decode(t);
    assert.deepEqual(la, lb);
    assert.equal(a.position, 6);
    a.truncate(3);
    assert.equal(a.position, 3);
    assert.deepEqual(a.prefill(prompt.slice(3)), la);
    assert.throws(() => a.decode(640), /token must be an integer in \[0, 640\), got 640/);
    assert.throws(() => a.truncate(9), /truncate: n must be an integer in \[0, 6\]/);
    a.truncate(0);
    b.truncate(0);
    assert.deepEqual(referenceGreedy(a, [1, 2, 3], 5).tokens, referenceGreedy(b, [1, 2, 3], 5).tokens);
    a.close();
    b.close();
  });
}
