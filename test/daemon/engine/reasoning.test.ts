// The reasoning splitter: hand cases, and every chunking of each case giving the same split.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ReasoningSplitter, promptOpensThinking } from '../../../daemon/engine/reasoning.js';
import { Prng } from '../../../robot/common/prng.js';

function split(chunks: string[], thinking = false): { reasoning: string; content: string } {
  const s = new ReasoningSplitter(thinking);
  const out = { reasoning: '', content: '' };
  for (const piece of [...chunks.flatMap((c) => s.push(c)), ...s.end()]) out[piece.type] += piece.text;
  return out;
}

/** Whole, per character, every split in two, and seeded random chunkings. */
function chunkings(text: string): string[][] {
  const chars = [...text];
  const out: string[][] = [[text], chars];
  for (let i = 1; i < chars.length; i++) out.push([chars.slice(0, i).join(''), chars.slice(i).join('')]);
  const r = new Prng(text.length + 7);
  for (let k = 0; k < 40; k++) {
    const parts: string[] = [];
    for (let at = 0; at < chars.length; ) {
      const n = 1 + r.int(5);
      parts.push(chars.slice(at, at + n).join(''));
      at += n;
    }
    out.push(parts);
  }
  return out;
}

const CASES: [string, boolean, { reasoning: string; content: string }][] = [
  // A call the model only thought about is reasoning text; the answer's own call is content.
  [
    '<think>\nI could <tool_call>{"name": "x"}</tool_call> </thi\n</think>\n\n<tool_call>y</tool_call>',
    false,
    { reasoning: 'I could <tool_call>{"name": "x"}</tool_call> </thi', content: '<tool_call>y</tool_call>' },
  ],
  ['  \n<think>a</think>b c', false, { reasoning: 'a', content: 'b c' }],
  ['Hi <think>not at the start</think>', false, { reasoning: '', content: 'Hi <think>not at the start</think>' }],
  ['<thinking>no', false, { reasoning: '', content: '<thinking>no' }],
  ['<thi', false, { reasoning: '', content: '<thi' }],
  ['<think>cut off mid-thought </th', false, { reasoning: 'cut off mid-thought </th', content: '' }],
  // The reasoning's two ends are trimmed; whitespace inside it is kept.
  ['<think>\n \n  one\n\n two \n\n</think>x', false, { reasoning: 'one\n\n two', content: 'x' }],
  ['\n  step one\n  \n', true, { reasoning: 'step one', content: '' }],
  ['<think> \n </think>\n', false, { reasoning: '', content: '' }],
  // Long whitespace runs (a model stuck on spaces) are held once, not rescanned per character.
  [
    `${' '.repeat(30)}<think>${' '.repeat(30)}a${' '.repeat(30)}b${' '.repeat(30)}</think> c`,
    false,
    { reasoning: `a${' '.repeat(30)}b`, content: 'c' },
  ],
  [`${' '.repeat(30)}x`, false, { reasoning: '', content: `${' '.repeat(30)}x` }],
  ['opened by the prompt</think>\nanswer', true, { reasoning: 'opened by the prompt', content: 'answer' }],
  ['', false, { reasoning: '', content: '' }],
  ['<think></think>', false, { reasoning: '', content: '' }],
];

test('reasoning and answer split the same way for every chunking', () => {
  for (const [text, thinking, want] of CASES)
    for (const chunks of chunkings(text))
      assert.deepEqual(split(chunks, thinking), want, `${JSON.stringify(text)} as ${JSON.stringify(chunks)}`);
});

test('a prompt that ends inside <think> is recognised', () => {
  assert.equal(promptOpensThinking('<|im_start|>assistant\n<think>\n'), true);
  assert.equal(promptOpensThinking('<|im_start|>assistant\n<think>\n\n</think>\n\n'), false);
  assert.equal(promptOpensThinking('<|im_start|>assistant\n'), false);
});
