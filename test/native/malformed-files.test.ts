// The malformed-file corpus: each broken model folder makes loadModel reject with its own
// clear message (file, tensor or field named), and the process survives every one.
import { execFileSync } from 'node:child_process';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, truncateSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { NativeModel, EngineError } from '../../daemon/engine/native-model.js';
import { editHeader, editJson, poisonTensor, shardOf, synthTemp } from './helpers/model-files.js';

type Edit = (dir: string) => void;

const K = 'model.layers.0.self_attn.k_proj.weight';
const kShard = (d: string) => shardOf(d, K);
const index = (d: string) => join(d, 'model.safetensors.index.json');
const config = (d: string) => join(d, 'config.json');
const dropTensor = (d: string, name: string) => {
  editHeader(shardOf(d, name), (h) => delete h[name]);
  editJson(index(d), (j) => delete (j.weight_map as Record<string, string>)[name]);
};
const setShard = (d: string, tensor: string, shard: string) =>
  editJson(index(d), (j) => ((j.weight_map as Record<string, string>)[tensor] = shard));

const corpus: [string, Edit, RegExp][] = [
  [
    'truncated file',
    (d) => truncateSync(kShard(d), readFileSync(kShard(d)).length - 100),
    /\.safetensors: tensor .* data_offsets \[\d+, \d+\] run past the data section .* the file is truncated/,
  ],
  [
    'file shorter than the length prefix',
    (d) => truncateSync(kShard(d), 5),
    /\.safetensors: file is 5 bytes, too short for the 8-byte header length/,
  ],
  [
    'header length past the end',
    (d) => {
      const b = readFileSync(kShard(d));
      b.writeBigUInt64LE(BigInt(b.length) * 2n, 0);
      writeFileSync(kShard(d), b);
    },
    /\.safetensors: header length \d+ runs past the end of the file/,
  ],
  [
    'offsets out of range',
    (d) =>
      editHeader(kShard(d), (h) => {
        h[K]!.data_offsets = [0, 100_000_000];
      }),
    new RegExp(`tensor ${K}: data_offsets \\[0, 100000000\\] run past the data section`),
  ],
  [
    'overlapping offsets',
    (d) =>
      editHeader(kShard(d), (h) => {
        const other = Object.keys(h).find(
          (n) => n !== K && n !== '__metadata__' && h[n]!.data_offsets[1]! > h[n]!.data_offsets[0]!,
        )!;
        const len = h[K]!.data_offsets[1]! - h[K]!.data_offsets[0]!;
        h[K]!.data_offsets = [h[other]!.data_offsets[0]!, h[other]!.data_offsets[0]! + len];
      }),
    /: tensors \S+ and \S+ overlap \(data_offsets/,
  ],
  [
    'unknown dtype',
    (d) =>
      editHeader(kShard(d), (h) => {
        h[K]!.dtype = 'Q4_K';
      }),
    new RegExp(`tensor ${K}: unknown dtype "Q4_K" \\(supported: BOOL, U8`),
  ],
  [
    'shape and size disagree',
    (d) =>
      editHeader(kShard(d), (h) => {
        h[K]!.shape = [64, 17];
      }),
    new RegExp(`tensor ${K}: shape \\[64, 17\\] of U32 needs 4352 bytes but data_offsets \\[\\d+, \\d+\\] hold 4096`),
  ],
  [
    'a shape whose byte count wraps to 0 (2^50 × 2^14 × 4 bytes = 2^66)',
    (d) =>
      editHeader(kShard(d), (h) => {
        h[K]!.shape = [2 ** 50, 2 ** 14];
        h[K]!.data_offsets = [0, 0];
      }),
    new RegExp(`tensor ${K}: shape \\[1125899906842624, 16384\\] of U32 needs more than 2\\^62 bytes`),
  ],
  [
    'bad JSON in the header',
    (d) => {
      const b = readFileSync(kShard(d));
      b.write('{"a":,', 8);
      writeFileSync(kShard(d), b);
    },
    /\.safetensors header: invalid JSON at byte 5 \(line 1, column 6\): expected a value/,
  ],
  [
    'bad JSON in config.json',
    (d) => writeFileSync(config(d), '{"model_type": "qwen3_moe",}'),
    /config\.json: invalid JSON at byte 27 \(line 1, column 28\): expected a string key/,
  ],
  [
    'missing tensor',
    (d) => dropTensor(d, K),
    new RegExp(`missing tensor ${K.replace(/\./g, '\\.')}, which the qwen3_moe architecture needs`),
  ],
  [
    'wrong shape',
    (d) =>
      editHeader(shardOf(d, 'model.norm.weight'), (h) => {
        h['model.norm.weight']!.shape = [64, 2];
      }),
    /tensor model\.norm\.weight has shape \[64, 2\] but config\.json implies \[128\] \(a vector\)/,
  ],
  [
    'quantisation bits disagree with the file',
    (d) =>
      editJson(config(d), (c) => {
        (c.quantization as Record<string, unknown>)['model.layers.0.mlp.gate'] = { group_size: 64, bits: 4 };
      }),
    /tensor model\.layers\.0\.mlp\.gate\.weight has shape \[16, 32\] but config\.json implies \[16, 16\] \(4-bit, group 64 from config\.json; the file looks 8-bit/,
  ],
  [
    'quantised weight with the wrong dtype',
    (d) =>
      editHeader(kShard(d), (h) => {
        h[K]!.dtype = 'F32';
      }),
    new RegExp(`tensor ${K} has dtype F32 but a quantised weight must be U32`),
  ],
  [
    'unsupported architecture',
    (d) =>
      editJson(config(d), (c) => {
        c.model_type = 'mistral';
      }),
    /config\.json: model_type "mistral" is not supported \(supported: qwen3_moe, glm4_moe, [^)]*qwen3_5_moe[^)]*llama, bailing_moe_linear\)/,
  ],
  [
    'missing config field',
    (d) =>
      editJson(config(d), (c) => {
        delete c.hidden_size;
      }),
    /config\.json: field hidden_size is missing \(qwen3_moe needs it\)/,
  ],
  [
    'config fields that disagree',
    (d) =>
      editJson(config(d), (c) => {
        c.num_key_value_heads = 3;
      }),
    /config\.json: field num_key_value_heads must divide num_attention_heads, got 3/,
  ],
  [
    'unsupported quantisation',
    (d) =>
      editJson(config(d), (c) => {
        c.quantization = { group_size: 64, bits: 3 };
      }),
    /quantization\.bits must be 4 or 8 .* got 3/,
  ],
  [
    'a config integer past 32 bits (once truncated to 16)',
    (d) =>
      editJson(config(d), (c) => {
        c.num_experts = 4294967312;
      }),
    /config\.json: field num_experts must be an integer in \[0, 2147483647\], got 4294967312/,
  ],
  [
    'a bos_token_id outside the vocabulary',
    (d) =>
      editJson(config(d), (c) => {
        c.bos_token_id = c.vocab_size;
      }),
    /config\.json: field bos_token_id must be a token id below vocab_size \d+, got \d+/,
  ],
  [
    'a NaN in a non-expert weight',
    (d) => poisonTensor(d, 'model.norm.weight', 3),
    /\.safetensors: tensor model\.norm\.weight holds a non-finite value \(NaN or ±Inf\) at element 3; the model's weights are corrupt/,
  ],
  ['no config.json', (d) => unlinkSync(config(d)), /has no config\.json/],
  [
    'no weights',
    (d) => {
      for (const f of readdirSync(d)) if (/^model.*\.safetensors(\.index\.json)?$/.test(f)) unlinkSync(join(d, f));
    },
    /has neither model\.safetensors\.index\.json nor model\*\.safetensors/,
  ],
  [
    'index names a missing shard',
    (d) => setShard(d, K, 'model-00099-of-00099.safetensors'),
    /model\.safetensors\.index\.json lists shard model-00099-of-00099\.safetensors but .* does not exist/,
  ],
  [
    'index escapes the folder',
    (d) => setShard(d, K, '../model.safetensors'),
    /names "\.\.\/model\.safetensors", which is not a plain file name/,
  ],
  [
    'index maps a tensor to the wrong shard',
    (d) => setShard(d, 'no.such.tensor', 'model-00001-of-00004.safetensors'),
    /maps tensor no\.such\.tensor to model-00001-of-00004\.safetensors but that shard has no such tensor/,
  ],
  ['empty weights file', (d) => writeFileSync(kShard(d), ''), /file is 0 bytes/],
  [
    'a rope_theta of 1 (no falling frequencies; yarn divides by its log)',
    (d) => editJson(config(d), (c) => (c.rope_theta = 1)),
    /config\.json: field rope_theta must be a finite number > 1, got 1/,
  ],
  [
    'a 65 MiB config.json',
    (d) => truncateSync(config(d), 65 << 20),
    /config\.json is over 64 MiB; it cannot be a model's JSON file/,
  ],
];

test('every malformed model folder is rejected with its own clear error', async (t) => {
  const seen = new Set<string>();
  for (const [name, edit, want] of corpus) {
    const dir = synthTemp(t, { arch: 'qwen3_moe', seed: 4, maxShardBytes: 600 * 1024 });
    edit(dir);
    const err = await NativeModel.load(dir).then(
      (m) => {
        m.dispose();
        return undefined;
      },
      (e: unknown) => e,
    );
    assert.ok(err instanceof EngineError, `${name}: expected a rejection, got ${String(err)}`);
    assert.match(err.message, want, name);
    seen.add(err.message);
  }
  assert.equal(seen.size, corpus.length, 'each case has its own message');
  const ok = await NativeModel.load(synthTemp(t, { arch: 'qwen3_moe', seed: 4, maxShardBytes: 600 * 1024 }));
  assert.equal(ok.summary.files, 4, 'the untouched folder (4 shards) loads');
  ok.dispose();
});

// The daemon checks paths before loading (daemon/util/file-roots.ts); a file swapped for a FIFO
// after that check must fail in the native open, not block a worker thread until a writer comes.
test('a FIFO in place of a model file fails at once', { timeout: 60_000 }, async (t) => {
  const fifo = (path: string) => {
    unlinkSync(path);
    execFileSync('mkfifo', [path]);
  };
  const cases: [string, (d: string) => string][] = [
    ['config.json', config],
    ['the shard index', index],
    ['a weights shard', kShard],
  ];
  for (const [name, pick] of cases) {
    const dir = synthTemp(t, { arch: 'qwen3_moe', seed: 4, maxShardBytes: 600 * 1024 });
    const path = pick(dir);
    fifo(path);
    const err = await NativeModel.load(dir).then(
      (m) => m.dispose(),
      (e: unknown) => e,
    );
    assert.ok(err instanceof EngineError, `${name}: expected a rejection, got ${String(err)}`);
    assert.equal(err.message, `${path} is not a regular file (a FIFO)`, name);
  }
});

test('a missing glm4_moe correction bias is named', async (t) => {
  const dir = synthTemp(t, { arch: 'glm4_moe' });
  const bias = 'model.layers.2.mlp.gate.e_score_correction_bias';
  dropTensor(dir, bias);
  await assert.rejects(
    NativeModel.load(dir),
    new RegExp(`missing tensor ${bias.replace(/\./g, '\\.')}, which the glm4_moe architecture needs`),
  );
});

// Values each small weight tensors do not bound: a product that would take GiBs per session, a
// section sum that would wrap a 32-bit int.
test('config values that would blow up a session or wrap a sum are refused by name', async (t) => {
  const cases: [string, 'qwen3_next' | 'qwen3_5_moe', (c: Record<string, unknown>) => void, RegExp][] = [
    [
      'linear head dims of 16384',
      'qwen3_next',
      (c) => (c.linear_key_head_dim = c.linear_value_head_dim = 16384),
      /recurrent state would be \d+ MiB \(.*linear_value_head_dim and linear_key_head_dim\), over the 256 MiB per layer/,
    ],
    [
      'mrope sections of 2^31 - 1',
      'qwen3_5_moe',
      (c) => {
        const rope = (c.text_config as Record<string, Record<string, unknown>>).rope_parameters!;
        rope.mrope_section = [2147483647, 2147483647, 2];
      },
      /field mrope_section must list sections in \[0, 1048576\] frequency slots/,
    ],
  ];
  for (const [name, arch, edit, want] of cases) {
    const dir = synthTemp(t, { arch, seed: 4 });
    editJson(config(dir), edit);
    await assert.rejects(NativeModel.load(dir), (e: Error) => e instanceof EngineError && want.test(e.message), name);
  }
});
