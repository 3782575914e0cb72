// `brainstem prerouter calibrate|eval` end to end on a tiny model and a text of a repeated
// phrase (its tokens determine their successors): JSON reports with per-layer recall before
// and after, a heads file the engine loads, a readable table without --json, and exit code 2
// for bad flags.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseLayers } from '../../../daemon/cli/prerouter.js';
import { NativeModel } from '../../../daemon/engine/native-model.js';
import { runCli } from '../../helpers/daemon.js';
import { synthTemp } from '../../native/helpers/model-files.js';

const PHRASE = 'move the left arm to the red cup, then open the gripper and lift it slowly. ';

test('prerouter calibrate writes heads and reports recall; eval reads them back', async (t) => {
  const dir = synthTemp(t, { arch: 'qwen3_moe', seed: 6 });
  const text = join(dir, 'calib.txt');
  writeFileSync(text, PHRASE.repeat(30));
  const out = join(dir, 'heads.safetensors');
  const cal = await runCli(
    [
      'prerouter',
      'calibrate',
      '--model',
      dir,
      '--text',
      text,
      '--out',
      out,
      '--layers',
      '1..2',
      '--steps',
      '120',
      '--units',
      '32',
      '--lr',
      '0.003',
      '--threads',
      '2',
      '--held-out',
      '0.2',
      '--json',
    ],
    {},
    { timeoutMs: 120_000 },
  );
  assert.equal(cal.code, 0, cal.stderr);
  const r = JSON.parse(cal.stdout) as {
    layers: { layer: number; predicts: number; held_out_recall_before: number; held_out_recall_after: number }[];
    out: string;
    top_k: number;
    mean: Record<string, number>;
  };
  assert.deepEqual(
    r.layers.map((l) => [l.layer, l.predicts]),
    [
      [1, 2],
      [2, 3],
    ],
  );
  assert.equal(r.top_k, 4);
  assert.ok(existsSync(out));
  for (const l of r.layers) assert.ok(l.held_out_recall_after > l.held_out_recall_before, JSON.stringify(l));
  for (const k of ['recall_before', 'recall_after', 'held_out_recall_before', 'held_out_recall_after'])
    assert.ok(k in r.mean, k);

  const m = await NativeModel.load(dir, { prerouter: out });
  assert.deepEqual(m.summary.stream.prerouterOwners, [1, 2]);
  m.dispose();

  const ev = await runCli(
    ['prerouter', 'eval', '--model', dir, '--heads', out, '--text', text, '--json'],
    {},
    { timeoutMs: 60_000 },
  );
  assert.equal(ev.code, 0, ev.stderr);
  const e = JSON.parse(ev.stdout) as { layers: { layer: number; recall: number; zero_training_recall: number }[] };
  assert.deepEqual(
    e.layers.map((l) => l.layer),
    [1, 2],
  );
  for (const l of e.layers) assert.ok(l.recall > l.zero_training_recall, JSON.stringify(l));

  const table = await runCli(
    ['prerouter', 'eval', '--model', dir, '--heads', out, '--text', text],
    {},
    { timeoutMs: 60_000 },
  );
  assert.equal(table.code, 0, table.stderr);
  assert.match(table.stdout, /layer → next +samples +recall +zero-training recall\n +1 → 2 /);
  assert.match(table.stdout, /mean recall \d+\.\d% \(zero-training heads: \d+\.\d%\)/);
});

test('prerouter commands reject bad input with exit code 2 and name the flag', async (t) => {
  const dir = synthTemp(t, { arch: 'qwen3_moe', seed: 6 });
  const text = join(dir, 'calib.txt');
  writeFileSync(text, PHRASE.repeat(3));
  const base = ['prerouter', 'calibrate', '--model', dir, '--text', text, '--out', join(dir, 'h.safetensors')];
  const cases: [string[], RegExp][] = [
    [[...base, '--layers', '3..1'], /--layers must be "a\.\.b" with a ≤ b/],
    [[...base, '--lr', 'fast'], /--lr must be a number in \[1e-9, 10\], got "fast"/],
    [
      ['prerouter', 'calibrate', '--model', dir, '--text', join(dir, 'nope.txt'), '--out', 'x'],
      /--text .*nope\.txt: file not found/,
    ],
    [
      ['prerouter', 'eval', '--model', dir, '--heads', join(dir, 'none.safetensors'), '--text', text],
      /cannot open .*none\.safetensors/,
    ],
    // Refused before any training, and without a stack.
    [
      ['prerouter', 'calibrate', '--model', dir, '--text', text, '--out', '/nonexistent/dir/h.safetensors'],
      /^brainstem: --out \/nonexistent\/dir\/h\.safetensors: cannot write into \/nonexistent\/dir \(ENOENT\)\n$/,
    ],
    // A routing width the model cannot take, found by the engine at load, named by this flag.
    [
      [...base, '--top-k', '99'],
      /^brainstem: --top-k: must be between 1 and 16 for this model \(the experts a token can reach\), got 99\n$/,
    ],
  ];
  for (const [args, re] of cases) {
    const r = await runCli(args, {}, { timeoutMs: 60_000 });
    assert.notEqual(r.code, 0, args.join(' '));
    assert.match(r.stderr, re, args.join(' '));
  }
  assert.deepEqual(parseLayers('4'), [4, 4]);
  assert.deepEqual(parseLayers(' 2..7 '), [2, 7]);
});
