// `models synth-adapter` and `lora merge-check` as commands: JSON output with the documented keys,
// usage errors (exit 2) naming the flag, bad adapters (exit 1) with the engine's message.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { synthModel } from '../../../daemon/tools/synth.js';

const main = fileURLToPath(new URL('../../../daemon/main.js', import.meta.url));
const run = (...args: string[]) => spawnSync(process.execPath, [main, ...args], { encoding: 'utf8', timeout: 120_000 });

let root = '';
let model = '';
before(() => {
  root = mkdtempSync(join(tmpdir(), 'brainstem-cli-lora-'));
  model = join(root, 'model');
  synthModel({ arch: 'glm4_moe', shape: 'tiny', out: model, seed: 3 });
});
after(() => rmSync(root, { recursive: true, force: true }));

test('synth-adapter writes each format and prints JSON; bad flags exit 2', () => {
  for (const format of ['peft', 'mlx', 'edge0']) {
    const out = join(root, format);
    const r = run(
      'models',
      'synth-adapter',
      '--model',
      model,
      '--out',
      out,
      '--format',
      format,
      '--rank',
      '4',
      '--alpha',
      '8',
      '--targets',
      'attention,shared',
      '--json',
    );
    assert.equal(r.status, 0, r.stderr);
    const s = JSON.parse(r.stdout);
    assert.equal(s.format, format);
    assert.equal(s.modules, 4 * 4 + 3 * 3, 'attention in 4 layers + shared experts in the 3 MoE layers');
    assert.ok(existsSync(s.file) && existsSync(join(out, 'adapter_config.json')));
  }
  const bad: [string[], RegExp][] = [
    [['--format', 'lycoris'], /--format must be one of peft, mlx, edge0, got "lycoris"/],
    [['--rank', '0'], /--rank must be an integer in \[1, 4096\], got "0"/],
    [['--rms', '-1'], /--rms must be a positive number, got "-1"/],
    [['--targets', 'experts'], /--targets must be one of attention, mlp, shared, linear, all, self_attn\.q_proj/],
    [['--num-layers', '99'], /--num-layers must be in \[1, \d+\] \(the model's layers\), got 99/],
  ];
  for (const [flags, want] of bad) {
    const r = run('models', 'synth-adapter', '--model', model, '--out', join(root, 'x'), ...flags);
    assert.equal(r.status, 2, `${flags.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, want);
  }
  const again = run('models', 'synth-adapter', '--model', model, '--out', join(root, 'peft'));
  assert.equal(again.status, 1);
  assert.match(again.stderr, /is not empty \(pass --force/);
});

test('merge-check prints modules with weight_retention and logits_retention', () => {
  const adapter = join(root, 'merge-adapter');
  assert.equal(run('models', 'synth-adapter', '--model', model, '--out', adapter, '--targets', 'all').status, 0);
  const r = run(
    'lora',
    'merge-check',
    '--model',
    model,
    '--adapter',
    adapter,
    '--prompts',
    '2',
    '--tokens',
    '5',
    '--json',
  );
  assert.equal(r.status, 0, r.stderr);
  const out = JSON.parse(r.stdout);
  assert.ok(
    out.modules.length > 0 &&
      out.modules.every((m: { weight_retention: number }) => Number.isFinite(m.weight_retention)),
  );
  assert.ok(Number.isFinite(out.logits_retention));
  assert.deepEqual(Object.keys(out.pooled).sort(), ['attention', 'dense_mlp', 'shared_mlp']);
  assert.deepEqual(out.published, { attention_projection: 0.34, dense_projection: 0.02, logits: 0.18 });
});

test('merge-check on a bad adapter exits 1 with the reason', () => {
  const bad = join(root, 'bad');
  assert.equal(run('models', 'synth-adapter', '--model', model, '--out', bad).status, 0);
  const cfg = join(bad, 'adapter_config.json');
  writeFileSync(
    cfg,
    JSON.stringify({ peft_type: 'LORA', r: 16, lora_alpha: 32, target_modules: ['q_proj'], use_dora: true }),
  );
  const r = run('lora', 'merge-check', '--model', model, '--adapter', bad);
  assert.equal(r.status, 1);
  assert.match(r.stderr, /use_dora must be false/);
  assert.doesNotMatch(r.stderr, /\n\s+at /, 'no stack trace');
});
