import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { TextTokenizer } from '../../../daemon/engine/tokenizer.js';
import { TextDiffStreamDecoder } from '../../../daemon/engine/detokenizer.js';
import { Prng } from '../../../robot/common/prng.js';
import { FIXTURE } from './fake-sources.js';
import { synthTiny } from '../../helpers/serving.js';

test('encodes with the hand-chosen merges and byte-level ids', async () => {
  const tok = await TextTokenizer.fromDir(FIXTURE);
  // Byte ids follow GPT-2's table: '!'..'~' are 0..93, so 'o' = 111 - 33 = 78; merges start at 256
  // ('Ġt' 256, 'he' 257, 'Ġthe' 258, ..., 'Ġw' 263, 'll' 265, 'hell' 266, 'hello' 267).
  assert.deepEqual(tok.encode('hello the world'), [267, 258, 263, 78, 81, 75, 67]);
  assert.equal(tok.decode([267, 258, 263, 78, 81, 75, 67]), 'hello the world');
  assert.equal(tok.vocabSize, 295);
  assert.equal(tok.byteLevel, true);
});

test('special tokens in text become their ids; control tokens are skipped when decoding', async () => {
  const tok = await TextTokenizer.fromDir(FIXTURE);
  const ids = tok.encode('<|im_start|>user\nhi<|im_end|>\n<tool_call>');
  assert.deepEqual(ids, [291, 278, 198, 71, 72, 292, 198, 293]);
  assert.equal(tok.isSpecial(292), true);
  assert.equal(tok.isSpecial(293), false, '<tool_call> is an added token but not a control token');
  assert.equal(tok.decode(ids), 'user\nhi\n<tool_call>');
  assert.equal(tok.decode(ids, false), '<|im_start|>user\nhi<|im_end|>\n<tool_call>');
  assert.equal(tok.idOf('<|im_end|>'), 292);
});

test('token bytes: byte tokens map through the byte-level table, added tokens are their text', async () => {
  const tok = await TextTokenizer.fromDir(FIXTURE);
  // 'Ġ' stands for the space byte; the two tokens of 'é' (0xC3 0xA9) are single bytes.
  assert.deepEqual([...tok.tokenBytes(258)!], [...Buffer.from(' the')]);
  const e = tok.encode('é');
  assert.deepEqual(
    e.map((id) => [...tok.tokenBytes(id)!]),
    [[0xc3], [0xa9]],
  );
  assert.deepEqual([...tok.tokenBytes(293)!], [...Buffer.from('<tool_call>')]);
  assert.equal(tok.tokenBytes(10_000), null);
});

test('streaming decode holds a character split across tokens until its last byte', async () => {
  const tok = await TextTokenizer.fromDir(FIXTURE);
  const ids = tok.encode('a😀b');
  assert.equal(ids.length, 6, 'the emoji is four byte tokens');
  const d = tok.streamDecoder();
  const parts = ids.map((id) => d.push(id));
  assert.deepEqual(parts, ['a', '', '', '', '😀', 'b']);
  assert.equal(d.flush(), '');
});

test('streamed text equals the full decode for random strings (seeded property)', async () => {
  const tok = await TextTokenizer.fromDir(FIXTURE);
  const alphabet = ['a', 'b', ' ', 'é', '😀', '中', '\n', '"', 'hello', ' the', '<|im_end|>', '<tool_call>'];
  for (let seed = 1; seed <= 60; seed++) {
    const r = new Prng(seed);
    let text = '';
    for (let i = 0; i < 1 + r.int(30); i++) text += alphabet[r.int(alphabet.length)];
    const ids = tok.encode(text);
    const d = tok.streamDecoder();
    const streamed = ids.map((id) => d.push(id)).join('') + d.flush();
    assert.equal(streamed, tok.decode(ids), `seed ${seed}: ${JSON.stringify(text)}`);
  }
});

test('an incomplete character at the end of the stream becomes U+FFFD', async () => {
  const tok = await TextTokenizer.fromDir(FIXTURE);
  const ids = tok.encode('😀').slice(0, 2);
  const d = tok.streamDecoder();
  assert.equal(ids.map((id) => d.push(id)).join(''), '');
  assert.equal(d.flush(), '\uFFFD');
});

test('diff decoder (non-byte-level vocabularies) waits while the text ends in U+FFFD', () => {
  // A toy decoder: id 1 = 'x', ids 2 and 3 together = 'é', 2 alone is incomplete.
  const decode = (ids: number[]): string =>
    ids.map((id, i) => (id === 1 ? 'x' : id === 2 ? (ids[i + 1] === 3 ? 'é' : '\uFFFD') : '')).join('');
  const d = new TextDiffStreamDecoder(decode);
  assert.deepEqual(
    [1, 2, 3, 1].map((id) => d.push(id)),
    ['x', '', 'é', 'x'],
  );
  assert.equal(d.flush(), '');
});

test('diff decoder: tokens that add nothing or only U+FFFD cost linear work, and their text still comes out', () => {
  // Each id alone decodes to U+FFFD (id 4) or to nothing (id 0); a quadratic decoder re-decodes
  // every pending id per push (2000²/2 = 2M ids), a windowed one a bounded few per push.
  for (const [id, each] of [
    [4, '\uFFFD'],
    [0, ''],
  ] as const) {
    let work = 0;
    const decode = (ids: number[]): string => {
      work += ids.length;
      return ids.map((i) => (i === 4 ? '\uFFFD' : i === 1 ? 'x' : '')).join('');
    };
    const d = new TextDiffStreamDecoder(decode);
    const out = Array.from({ length: 2000 }, () => d.push(id)).join('') + d.push(1) + d.flush();
    assert.equal(out, `${each.repeat(2000)}x`, `id ${id}`);
    assert.ok(work < 2000 * 40, `id ${id}: ${work} ids decoded for 2001 pushes`);
  }
});

test('a tokenizer.json without a model is a clear load error', () => {
  assert.throws(() => new TextTokenizer({ version: '1.0' }), /tokenizer\.json has no "model" object/);
});

test('long texts are encoded section by section between added tokens, remembered, with the same ids as whole', async () => {
  const model = await synthTiny(2);
  try {
    for (const tok of [await TextTokenizer.fromDir(FIXTURE), await TextTokenizer.fromDir(model.path)]) {
      const whole = (text: string): number[] =>
        (tok as unknown as { encodeWhole(t: string): number[] }).encodeWhole(text);
      const r = new Prng(7);
      const pieces = [
        '<|im_start|>',
        '<|im_end|>',
        '<tool_call>',
        '</tool_call>',
        '\n',
        ' ',
        'é',
        '0.123456',
        '{"a": [1, 2]}',
        'hello the world',
        '<',
        '|',
        '🙂',
      ];
      let text = '<|im_start|>system\nYou drive one arm.<|im_end|>\n';
      for (let turn = 0; turn < 6; turn++) {
        for (let i = 0; i < 400; i++) text += pieces[r.nextU32() % pieces.length];
        text += '<|im_end|>\n<|im_start|>assistant\n';
        assert.ok(text.length >= 2048 || turn < 2);
        // Each longer prompt shares its sections with the last (the memo answers those).
        assert.deepEqual(tok.encode(text), whole(text), `turn ${turn}`);
        assert.deepEqual(tok.encode(text), whole(text), `turn ${turn}, again`);
      }
      // Added tokens back to back, at the start and the end.
      const edge = `<|im_end|><|im_start|>${'x'.repeat(3000)}<tool_call></tool_call>`;
      assert.deepEqual(tok.encode(edge), whole(edge));
      assert.ok((tok as unknown as { memo: Map<string, number[]> }).memo.size > 0, 'sections were remembered');
    }
  } finally {
    model.remove();
  }
});

test('encodeAsync: long sections are encoded on a worker thread, with the ids encode gives, while the event loop runs', async () => {
  const model = await synthTiny(2);
  const tok = await TextTokenizer.fromDir(model.path);
  try {
    const r = new Prng(11);
    const words = ['hello', ' the', ' world', ',', '\n', ' 0.25', ' é', '🙂', ' {"x": 1}'];
    let body = '';
    while (body.length < 80_000) body += words[r.nextU32() % words.length];
    const text = `<|im_start|>user\n${body}<|im_end|>\n<|im_start|>assistant\n`;
    let turned = false;
    setImmediate(() => (turned = true));
    const ids = await tok.encodeAsync(text);
    assert.ok(turned, 'the event loop turned while the long section was encoded');
    assert.deepEqual(ids, new TextTokenizer(await readTokenizerJson(model.path)).encode(text));
    // The section is remembered: the same prompt again (and the next turn) answers here.
    turned = false;
    setImmediate(() => (turned = true));
    assert.deepEqual(await tok.encodeAsync(text), ids);
    assert.equal(turned, false, 'a remembered section needs no thread');
    // Short texts stay on this thread.
    assert.deepEqual(await tok.encodeAsync('<|im_start|>hi'), tok.encode('<|im_start|>hi'));
  } finally {
    await tok.close();
    model.remove();
  }
});

test('encodeAsync: a worker that cannot load the folder falls back to encoding here', async () => {
  const model = await synthTiny(2);
  const tok = await TextTokenizer.fromDir(model.path);
  try {
    const text = 'abc '.repeat(10_000);
    const want = new TextTokenizer(await readTokenizerJson(model.path)).encode(`${text} `);
    rmSync(join(model.path, 'tokenizer.json'));
    assert.deepEqual(await tok.encodeAsync(`${text} `), want);
  } finally {
    await tok.close();
    model.remove();
  }
});

async function readTokenizerJson(dir: string): Promise<unknown> {
  return JSON.parse(readFileSync(join(dir, 'tokenizer.json'), 'utf8'));
}
