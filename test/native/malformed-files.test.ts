// The malformed-file corpus: each broken model folder makes loadModel reject with its own
// clear message (file, tensor or field named), and the process survives every one.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, truncateSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { NativeModel, EngineError } from '../../daemon/engine/native-model.js';
import { tempDir } from '../helpers/temp.js';
import { safetensorsBytes, tinyModel, writeTinyModel, type TinyModel } from './helpers/tiny-model.js';

type Edit = (dir: string, model: TinyModel) => void;

const st = (dir: string) => join(dir, 'model.safetensors');
const rewrite = (dir: string, model: TinyModel, edit: Parameters<typeof safetensorsBytes>[1]) =>
  writeFileSync(st(dir), safetensorsBytes(model.tensors, edit));
const editConfig = (dir: string, edit: (c: Record<string, unknown>) => void) => {
  const c = JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8')) as Record<string, unknown>;
  edit(c);
  writeFileSync(join(dir, 'config.json'), JSON.stringify(c));
};
const K = 'model.layers.0.self_attn.k_proj.weight';

const corpus: [string, Edit, RegExp][] = [
  ['truncated file', (d) => truncateSync(st(d), readFileSync(st(d)).length - 100),
    /model\.safetensors: tensor .* data_offsets \[\d+, \d+\] run past the data section .* the file is truncated/],
  ['file shorter than the length prefix', (d) => truncateSync(st(d), 5), /model\.safetensors: file is 5 bytes, too short for the 8-byte header length/],
  ['header length past the end', (d) => {
    const b = readFileSync(st(d));
    b.writeBigUInt64LE(BigInt(b.length) * 2n, 0);
    writeFileSync(st(d), b);
  }, /model\.safetensors: header length \d+ runs past the end of the file/],
  ['offsets out of range', (d, m) => rewrite(d, m, (h) => { h[K]!.data_offsets = [0, 10_000_000]; }),
    new RegExp(`tensor ${K}: data_offsets \\[0, 10000000\\] run past the data section`)],
  ['overlapping offsets', (d, m) => rewrite(d, m, (h) => {
    const a = h['model.layers.0.self_attn.q_proj.weight']!;
    const b = h[K]!;
    const len = b.data_offsets[1]! - b.data_offsets[0]!;
    b.data_offsets = [a.data_offsets[0]!, a.data_offsets[0]! + len];
  }), /tensors model\.layers\.0\.self_attn\.(q|k)_proj\.weight and model\.layers\.0\.self_attn\.(q|k)_proj\.weight overlap/],
  ['unknown dtype', (d, m) => rewrite(d, m, (h) => { h[K]!.dtype = 'Q4_K'; }), new RegExp(`tensor ${K}: unknown dtype "Q4_K" \\(supported: BOOL, U8`)],
  ['shape and size disagree', (d, m) => rewrite(d, m, (h) => { h[K]!.shape = [32, 9]; }),
    new RegExp(`tensor ${K}: shape \\[32, 9\\] of U32 needs 1152 bytes but data_offsets \\[\\d+, \\d+\\] hold 1024`)],
  ['bad JSON in the header', (d) => {
    const b = readFileSync(st(d));
    b.write('{"x":,', 8 + 24);
    writeFileSync(st(d), b);
  }, /model\.safetensors header: invalid JSON at byte \d+/],
  ['bad JSON in config.json', (d) => writeFileSync(join(d, 'config.json'), '{"model_type": "qwen3_moe",}'),
    /config\.json: invalid JSON at byte 27 \(line 1, column 28\): expected a string key/],
  ['missing tensor', (d, m) => writeFileSync(st(d), safetensorsBytes(m.tensors.filter((t) => t.name !== K))),
    new RegExp(`missing tensor ${K.replace(/\./g, '\\.')}, which the qwen3_moe architecture needs`)],
  ['wrong shape', (d, m) => {
    const t = m.tensors.find((x) => x.name === 'model.norm.weight')!;
    t.shape = [32, 2];
    writeFileSync(st(d), safetensorsBytes(m.tensors));
  }, /tensor model\.norm\.weight has shape \[32, 2\] but config\.json implies \[64\] \(a vector\)/],
  ['quantisation bits disagree with the file', (d) => editConfig(d, (c) => {
    (c.quantization as Record<string, unknown>)['model.layers.0.mlp.gate'] = { group_size: 64, bits: 4 };
  }), /tensor model\.layers\.0\.mlp\.gate\.weight has shape \[8, 16\] but config\.json implies \[8, 8\] \(4-bit, group 64 from config\.json; the file looks 8-bit/],
  ['quantised weight with the wrong dtype', (d, m) => rewrite(d, m, (h) => { h[K]!.dtype = 'F32'; }),
    new RegExp(`tensor ${K} has dtype F32 but a quantised weight must be U32`)],
  ['unsupported architecture', (d) => editConfig(d, (c) => { c.model_type = 'llama'; }),
    /config\.json: model_type "llama" is not supported \(supported: qwen3_moe, glm4_moe\)/],
  ['missing config field', (d) => editConfig(d, (c) => { delete c.hidden_size; }), /config\.json: field hidden_size is missing \(qwen3_moe needs it\)/],
  ['config field of the wrong type', (d) => editConfig(d, (c) => { c.num_key_value_heads = 3; }),
    /config\.json: field num_key_value_heads must divide num_attention_heads, got 3/],
  ['unsupported quantisation', (d) => editConfig(d, (c) => { c.quantization = { group_size: 64, bits: 3 }; }),
    /quantization\.bits must be 4 or 8 .* got 3/],
  ['no config.json', (d) => unlinkSync(join(d, 'config.json')), /has no config\.json/],
  ['no weights', (d) => unlinkSync(st(d)), /has neither model\.safetensors\.index\.json nor model\*\.safetensors/],
  ['index names a missing shard', (d) => writeFileSync(join(d, 'model.safetensors.index.json'),
    JSON.stringify({ weight_map: { [K]: 'model-00009-of-00009.safetensors' } })),
    /model\.safetensors\.index\.json lists shard model-00009-of-00009\.safetensors but .* does not exist/],
  ['index escapes the folder', (d) => writeFileSync(join(d, 'model.safetensors.index.json'),
    JSON.stringify({ weight_map: { [K]: '../model.safetensors' } })), /names "\.\.\/model\.safetensors", which is not a plain file name/],
  ['index maps a tensor to the wrong shard', (d) => writeFileSync(join(d, 'model.safetensors.index.json'),
    JSON.stringify({ weight_map: { 'no.such.tensor': 'model.safetensors' } })),
    /maps tensor no\.such\.tensor to model\.safetensors but that shard has no such tensor/],
  ['empty weights file', (d) => writeFileSync(st(d), ''), /file is 0 bytes/],
];

test('every malformed model folder is rejected with its own clear error', async (t) => {
  const tmp = tempDir('bs-malformed-');
  t.after(() => tmp.remove());
  const root = tmp.path;
  const seen = new Set<string>();
  for (const [i, [name, edit, want]] of corpus.entries()) {
    const dir = join(root, String(i));
    const model = tinyModel({ arch: 'qwen3_moe', tieWordEmbeddings: false });
    writeTinyModel(dir, { arch: 'qwen3_moe' }, model);
    edit(dir, tinyModel({ arch: 'qwen3_moe', tieWordEmbeddings: false }));
    const err = await NativeModel.load(dir).then(
      (m) => {
        m.dispose();
        return undefined;
      },
      (e: unknown) => e,
    );
    assert.ok(err instanceof EngineError, `${name}: expected a rejection, got ${String(err)}`);
    assert.match(err.message, want, `${name}`);
    seen.add(err.message);
  }
  assert.equal(seen.size, corpus.length, 'each case has its own message');
  // The untouched folder still loads after all of that.
  const ok = join(root, 'ok');
  writeTinyModel(ok, { arch: 'qwen3_moe' });
  const m = await NativeModel.load(ok);
  assert.equal(m.summary.arch, 'qwen3_moe');
  m.dispose();
});

test('a missing glm4_moe correction bias is named', async (t) => {
  const tmp = tempDir('bs-malformed-');
  t.after(() => tmp.remove());
  const dir = tmp.path;
  const model = tinyModel({ arch: 'glm4_moe' });
  model.tensors = model.tensors.filter((x) => x.name !== 'model.layers.2.mlp.gate.e_score_correction_bias');
  writeTinyModel(dir, { arch: 'glm4_moe' }, model);
  await assert.rejects(NativeModel.load(dir), /missing tensor model\.layers\.2\.mlp\.gate\.e_score_correction_bias, which the glm4_moe architecture needs/);
});
