import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseStrictJson } from '../../../robot/tools/strict-json.js';
import { Prng } from '../../../robot/common/prng.js';

function randomValue(r: Prng, depth: number): unknown {
  const k = r.int(depth > 3 ? 4 : 7);
  if (k === 0) return r.next() < 0.5 ? null : r.next() < 0.5;
  if (k === 1) return [0, -0.5, 1e-7, 123456789, -3.25e21, r.normal() * 1e3][r.int(6)];
  if (k === 2) return r.int(1000) - 500;
  if (k === 3) return ['', 'a"b', 'tab\there', 'üñí 😀', '\u0001\u001f', 'back\\slash', '</tool_call>'][r.int(7)];
  if (k === 4 || k === 5) return Array.from({ length: r.int(4) }, () => randomValue(r, depth + 1));
  return Object.fromEntries(
    Array.from({ length: r.int(4) }, (_, i) => [`k${i}${['', 'é', ' x'][r.int(3)]}`, randomValue(r, depth + 1)]),
  );
}

test('agrees with JSON.parse on valid JSON (seeded, 2,000 values, compact and indented)', () => {
  const r = new Prng(5);
  for (let i = 0; i < 2000; i++) {
    const text = JSON.stringify(randomValue(r, 0), null, i % 2 ? 2 : undefined) ?? 'null';
    const got = parseStrictJson(text);
    assert.ok(got.ok, `case ${i} (seed 5): ${text} → ${got.ok ? '' : got.error}`);
    assert.deepEqual(got.ok && got.value, JSON.parse(text), `case ${i} (seed 5): ${text}`);
  }
});

test('accepts and refuses what JSON.parse does on mutated JSON, but for its own refusals (seeded, 5,000 texts)', () => {
  const r = new Prng(11);
  const alphabet = ' \t\n{}[]",:.eE+-0123456789\\uaZ';
  for (let i = 0; i < 5000; i++) {
    let text = JSON.stringify(randomValue(r, 0), null, i % 2 ? 1 : undefined) ?? 'null';
    for (let k = r.int(3); k > 0; k--) {
      const at = r.int(text.length + 1);
      const op = r.int(3);
      const c = alphabet[r.int(alphabet.length)]!;
      text =
        op === 0
          ? text.slice(0, at) + c + text.slice(at)
          : op === 1
            ? text.slice(0, at) + text.slice(at + 1)
            : text.slice(0, at);
    }
    let want: { ok: boolean; value?: unknown };
    try {
      want = { ok: true, value: JSON.parse(text) };
    } catch {
      want = { ok: false };
    }
    const got = parseStrictJson(text, 64);
    if (!got.ok && /^duplicate key|numbers must be finite/.test(got.error)) continue;
    const label = `case ${i} (seed 11): ${JSON.stringify(text)} → ${got.ok ? 'ok' : got.error}`;
    assert.equal(got.ok, want.ok, label);
    if (got.ok) assert.deepEqual(got.value, want.value, label);
  }
});

test('errors say what is wrong and where', () => {
  const cases: [string, RegExp][] = [
    ['{"a":1,"a":2}', /^duplicate key "a" at position 7$/],
    ['[1,NaN]', /^NaN at position 3 is not valid JSON: numbers must be finite$/],
    ['[-Infinity]', /^-Infinity at position 1/],
    ['{"a":1', /^JSON ends early at position 6 \(truncated\?\)$/],
    ['{"a":1.', /ends early/],
    ['{"a":tr', /ends early/],
    ['"\\u12', /ends early/],
    ['[01]', /^malformed number "01" at position 1$/],
    ['{"a":1}{"b":2}', /^another JSON value after the JSON value at position 7$/],
    ['{"a":1} hi', /^unexpected text "hi" after the JSON value at position 8$/],
    ['"a\nb"', /^control character U\+000a inside the string at position 2 \(escape it\)$/],
    ['"\\x41"', /^invalid escape \\x in the string starting at position 0$/],
    ['{a:1}', /^expected a "quoted" key at position 1, found "a"$/],
    ['{"a" 1}', /^expected ":" at position 5, found "1"$/],
    ['[1 2]', /^expected "," or "\]" at position 3, found "2"$/],
    ['[1,]', /^unexpected "\]" at position 3 where a JSON value should start$/],
    ['[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]', /^JSON nested deeper than 32 levels/],
  ];
  for (const [text, re] of cases) {
    const r = parseStrictJson(text);
    assert.equal(r.ok, false, text);
    assert.match(r.ok ? '' : r.error, re, text);
  }
});

test('keys are own properties ("__proto__" included); overflow parses to Infinity for the schema to refuse', () => {
  const r = parseStrictJson('{"__proto__":{"x":1}}');
  assert.ok(r.ok);
  const v = r.ok ? (r.value as Record<string, unknown>) : {};
  assert.equal(Object.getPrototypeOf(v), Object.prototype);
  assert.deepEqual(Object.keys(v), ['__proto__']);
  assert.equal((v as { x?: unknown }).x, undefined);
  assert.deepEqual(parseStrictJson('[1e400]'), { ok: true, value: [Infinity] });
  assert.deepEqual(parseStrictJson(' \n {"a":1}\t '), { ok: true, value: { a: 1 } });
});
