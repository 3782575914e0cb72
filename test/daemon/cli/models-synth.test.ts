import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
// index.js first: command modules import group() from it, and it imports them (an ESM cycle).
import '../../../daemon/cli/index.js';
import { parseSynthOptions } from '../../../daemon/cli/models-synth.js';

const main = fileURLToPath(new URL('../../../daemon/main.js', import.meta.url));
const run = (...args: string[]) =>
  spawnSync(process.execPath, [main, 'models', 'synth', ...args], { encoding: 'utf8' });

let root = '';
before(() => {
  root = mkdtempSync(join(tmpdir(), 'brainstem-cli-synth-'));
});
after(() => rmSync(root, { recursive: true, force: true }));

const base = { arch: 'glm4_moe', shape: 'tiny', out: '/x', seed: '0', format: 'mlx', ggufType: 'f16' };

test('options parse into synth options; bad values name the flag, the rule and the value', () => {
  const { opts, format, ggufType } = parseSynthOptions({
    ...base,
    seed: '7',
    bits: '8',
    groupSize: '32',
    nGroup: '1',
    shardMb: '0.25',
  });
  assert.deepEqual(
    [opts.seed, opts.bits, opts.groupSize, opts.nGroup, opts.maxShardBytes, format, ggufType],
    [7, 8, 32, 1, 262144, 'mlx', 'f16'],
  );
  assert.deepEqual(parseSynthOptions({ ...base, arch: 'qwen3_moe', mlpOnlyLayers: '1,2' }).opts.mlpOnlyLayers, [1, 2]);
  const bad: [Record<string, string>, RegExp][] = [
    [
      { arch: 'mistral' },
      /--arch must be one of qwen3_moe, glm4_moe, [^"]*qwen3_5_moe, qwen3, llama, bailing_moe_linear, qwen3_vl_moe, got "mistral"/,
    ],
    [{ shape: 'huge' }, /--shape must be one of tiny, moe-small, moe-30b, moe-35b, dense-small, ring-mini, got "huge"/],
    [{ seed: '-1' }, /--seed must be an integer in \[0, 4294967295\], got "-1"/],
    [{ bits: '3' }, /--bits must be one of 2, 4, 8, got "3"/],
    [{ groupSize: '48' }, /--group-size must be one of 32, 64, 128, got "48"/],
    [{ format: 'onnx' }, /--format must be one of mlx, gguf, got "onnx"/],
    [{ ggufType: 'q5_k' }, /--gguf-type must be one of f32, f16, q4_0, q8_0, got "q5_k"/],
    [{ shardMb: '0' }, /--shard-mb must be a positive number, got "0"/],
    // A family's option given to another family would be ignored without a word.
    [{ mlpOnlyLayers: '1' }, /--mlp-only-layers applies to qwen3_moe and qwen3_vl_moe only, not glm4_moe/],
    [{ arch: 'qwen3_moe', nGroup: '4' }, /--n-group applies to glm4_moe and bailing_moe_linear only, not qwen3_moe/],
    [{ arch: 'qwen3_next', topkGroup: '2' }, /--topk-group applies to .* only, not qwen3_next/],
    [{ arch: 'llama', decoderSparseStep: '2' }, /--decoder-sparse-step applies to .* only, not llama/],
    [
      { arch: 'qwen3_moe', vision: true as never },
      /--vision applies to qwen3_5_moe and qwen3_vl_moe only, not qwen3_moe/,
    ],
  ];
  for (const [patch, message] of bad) assert.throws(() => parseSynthOptions({ ...base, ...patch }), message);
  assert.equal(parseSynthOptions({ ...base, tokenizer: '/some/dir' }).opts.tokenizer, '/some/dir');
});

test('the command writes an MLX folder and prints JSON; refuses a non-empty folder with exit 1', () => {
  const out = join(root, 'mlx');
  const r = run('--arch', 'qwen3_moe', '--shape', 'tiny', '--out', out, '--seed', '3', '--json');
  assert.equal(r.status, 0, r.stderr);
  const summary = JSON.parse(r.stdout);
  assert.equal(summary.format, 'mlx');
  assert.ok(summary.files.some((f: { name: string }) => f.name === 'model.safetensors.index.json'));
  const again = run('--arch', 'qwen3_moe', '--shape', 'tiny', '--out', out);
  assert.equal(again.status, 1);
  assert.match(again.stderr, /is not empty \(pass --force/);
  const usage = run('--arch', 'qwen3_moe', '--shape', 'tiny', '--out', out, '--bits', '5');
  assert.equal(usage.status, 2);
  assert.match(usage.stderr, /--bits must be one of 2, 4, 8, got "5"/);
});

test('--format gguf leaves only the GGUF file behind', () => {
  const out = join(root, 'gguf');
  const r = run(
    '--arch',
    'glm4_moe',
    '--shape',
    'tiny',
    '--out',
    out,
    '--format',
    'gguf',
    '--gguf-type',
    'q4_0',
    '--n-group',
    '1',
  );
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /weights are random/);
  assert.deepEqual(readdirSync(out), ['model-q4_0.gguf']);
  assert.ok(!existsSync(join(out, '.mlx-tmp')));
});
