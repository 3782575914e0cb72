import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Tokenizer } from '@huggingface/tokenizers';
import {
  BYTE_CHARS,
  byteLevel,
  QWEN_ADDED_TOKENS,
  synthTokenizer,
  trainBpe,
} from '../../../daemon/tools/tokenizer-synth.js';

const TEXTS = [
  'Hello robot! Move the arm to the red block.',
  '{"name": "move_to", "arguments": {"target": [0.4, 0.1, 0.25]}}',
  '<|im_start|>user\nWhat is 3.14 * 2?<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n',
  'ünïcödé, 日本語, emoji 🤖 and tabs\tand\r\nnewlines   with   spaces ',
  '<tool_call>\n{"name": "set_gripper", "arguments": {"gripper": 0.5}}\n</tool_call>',
  '',
];

/** encode → decode (the library refuses to decode an empty id list). */
function roundTrip(tok: Tokenizer, text: string): string {
  const ids = tok.encode(text).ids;
  return ids.length === 0 ? '' : tok.decode(ids);
}

function load(vocabSize: number): Tokenizer {
  const t = synthTokenizer(vocabSize);
  return new Tokenizer(t.tokenizerJson, t.tokenizerConfigJson);
}

test('BPE training merges the most frequent pair first and stops below two occurrences', () => {
  // Pre-tokens "aab", "Ġaab" ×2, "Ġab": a+b ×4 beats a+a ×3 and Ġ+a ×3; then a+ab ×3; then Ġ+aab ×2;
  // Ġ+ab occurs once, so training stops there.
  assert.deepEqual(trainBpe('aab aab aab ab', 10), [
    ['a', 'b'],
    ['a', 'ab'],
    ['Ġ', 'aab'],
  ]);
  assert.deepEqual(trainBpe('aab aab aab ab', 1), [['a', 'b']]);
});

test('byte-level alphabet covers all 256 bytes with distinct printable characters', () => {
  assert.equal(new Set(BYTE_CHARS).size, 256);
  assert.equal(BYTE_CHARS[32], 'Ġ');
  assert.equal(BYTE_CHARS[10], 'Ċ');
  assert.equal(byteLevel('a b'), 'aĠb');
});

test('tiny tokenizer (vocab 640): loads, round-trips text, special tokens get single ids', () => {
  const t = synthTokenizer(640);
  assert.equal(t.vocab.length, 600);
  assert.equal(t.specialIds.endoftext, 600);
  const tok = load(640);
  for (const text of TEXTS) {
    const ids = tok.encode(text).ids;
    assert.ok(
      ids.every((id: number) => id >= 0 && id < 626),
      `ids in range for ${JSON.stringify(text)}`,
    );
    assert.equal(roundTrip(tok, text), text);
  }
  const ids = tok.encode('<|im_start|>user<|im_end|><tool_call></tool_call><think></think>').ids;
  const s = t.specialIds;
  assert.deepEqual(
    [ids[0], ids.at(-5), ids.at(-4), ids.at(-3), ids.at(-2), ids.at(-1)],
    [s.imStart, s.imEnd, s.toolCall, s.toolCallEnd, s.think, s.thinkEnd],
  );
  // Learned merges compress English: far fewer tokens than bytes.
  assert.ok(tok.encode(TEXTS[0]).ids.length < TEXTS[0].length / 2);
});

test('full-size tokenizer: every id matches Qwen3 and every regular id decodes', () => {
  const t = synthTokenizer(151936);
  assert.equal(t.vocab.length, 151643);
  assert.equal(new Set(t.vocab).size, 151643, 'tokens are distinct');
  const tok = load(151936);
  const expected: [string, number][] = [
    ['<|endoftext|>', 151643],
    ['<|im_start|>', 151644],
    ['<|im_end|>', 151645],
    ['<tool_call>', 151657],
    ['</tool_call>', 151658],
    ['<tool_response>', 151665],
    ['</tool_response>', 151666],
    ['<think>', 151667],
    ['</think>', 151668],
  ];
  for (const [text, id] of expected) {
    assert.deepEqual(tok.encode(text).ids, [id], text);
    assert.equal(QWEN_ADDED_TOKENS[id - 151643].content, text);
  }
  for (const text of TEXTS) assert.equal(roundTrip(tok, text), text);
  for (const id of [0, 255, 256, 1000, 100_000, 151_642]) assert.ok(tok.decode([id]).length > 0, `id ${id} decodes`);
  assert.deepEqual(t.tokenizerConfigJson.eos_token, '<|im_end|>');
  assert.deepEqual(t.generationConfigJson.eos_token_id, [151645, 151643]);
});
