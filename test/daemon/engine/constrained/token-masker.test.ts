import { test } from 'node:test';
import assert from 'node:assert/strict';
import { GrammarBuilder, GrammarError, type Node } from '../../../../daemon/engine/constrained/grammar.js';
import { GrammarMasker } from '../../../../daemon/engine/constrained/token-masker.js';
import { TokenTrie } from '../../../../daemon/engine/constrained/token-trie.js';
import { ByteStreamDecoder } from '../../../../daemon/engine/detokenizer.js';
import { generate } from '../../../../daemon/engine/generate.js';
import { parseSchema } from '../../../../daemon/engine/json-schema/schema.js';
import { validateJson } from '../../../../daemon/engine/json-schema/validate.js';
import { formatIssues } from '../../../../robot/common/validation/issue.js';
import { PrefixSession } from '../../../../daemon/engine/prefix-cache.js';
import { DEFAULT_SAMPLING, Sampler } from '../../../../daemon/engine/sampler.js';
import { ToolCallStreamParser } from '../../../../daemon/engine/tool-calls/stream-parser.js';
import { type ToolDef, parseTools } from '../../../../daemon/engine/tool-calls/tools.js';
import { Prng } from '../../../../robot/common/prng.js';
import { syntheticByteVocab } from '../../../../daemon/bench/synthetic-vocab.js';
import { RandomLogitsSource } from '../fake-sources.js';

const enc = new TextEncoder();

const TOOL_POOL = parseTools([
  {
    type: 'function',
    function: {
      name: 'move_to',
      parameters: {
        type: 'object',
        properties: {
          target: { type: 'array', items: { type: 'number', minimum: -1, maximum: 1 }, minItems: 3, maxItems: 3 },
          speed: { type: 'number', exclusiveMinimum: 0, maximum: 0.5 },
          note: { type: 'string', maxLength: 12 },
        },
        required: ['target'],
        additionalProperties: false,
      },
    },
  },
  {
    type: 'function',
    function: {
      name: 'set_gripper',
      parameters: {
        type: 'object',
        properties: {
          gripper: { type: 'number', minimum: 0, maximum: 1 },
          arm: { enum: ['left', 'right', 'both'] },
          hold: { type: ['boolean', 'null'] },
        },
        required: ['gripper', 'arm'],
      },
    },
  },
  {
    type: 'function',
    function: {
      name: 'plan',
      parameters: {
        type: 'object',
        properties: {
          steps: {
            type: 'array',
            items: {
              type: 'object',
              properties: {
                id: { type: 'integer', minimum: 1, maximum: 99 },
                kind: { const: 'waypoint' },
                label: { type: 'string', minLength: 2, maxLength: 6 },
              },
              required: ['id', 'kind'],
              additionalProperties: false,
            },
            minItems: 1,
            maxItems: 3,
          },
          mode: {
            oneOf: [{ type: 'integer', minimum: 0, maximum: 3 }, { type: 'string', enum: ['auto'] }, { type: 'null' }],
          },
          strict: { type: 'boolean' },
        },
        required: ['steps'],
        additionalProperties: false,
      },
    },
  },
  {
    type: 'function',
    function: {
      name: 'annotate',
      parameters: {
        type: 'object',
        properties: {
          text: { type: 'string' },
          tags: { type: 'array', items: { type: 'string', minLength: 1, maxLength: 4 }, maxItems: 4 },
          meta: {},
          extra: { type: 'object' },
          score: {
            anyOf: [
              { type: 'integer', minimum: -5, maximum: 5 },
              { type: 'string', maxLength: 3 },
            ],
          },
        },
        required: ['text', 'meta'],
      },
    },
  },
  { type: 'function', function: { name: 'stop', parameters: { type: 'object', properties: {} } } },
  {
    type: 'function',
    function: {
      name: 'count',
      parameters: {
        type: 'object',
        properties: {
          n: { type: 'integer', minimum: 100, maximum: 105 },
          x: { type: 'number', minimum: -0.25, maximum: -0.125 },
        },
        required: ['n', 'x'],
        additionalProperties: false,
      },
    },
  },
]);

function toolGrammar(b: GrammarBuilder, tools: readonly ToolDef[]): Node {
  return b.seq([
    b.lit('<tool_call>\n{"name": '),
    b.alt(tools.map((t) => b.seq([b.lit(`${JSON.stringify(t.name)}, "arguments": `), b.schema(t.schema)]))),
    b.lit('}\n</tool_call>'),
  ]);
}

test('mask for a tiny vocabulary is exactly the tokens that keep a valid prefix (hand-checked)', () => {
  // Ids 0..95: bytes 0x20..0x7f; 96: '\n'; then multi-byte words.
  const words = ['tr', 'true', 'fa', 'truex', 'al', 'ls', 'se'];
  const word = (w: string): number => 97 + words.indexOf(w);
  const bytes: Array<Uint8Array | null> = [
    ...Array.from({ length: 0x60 }, (_, i) => Uint8Array.of(i + 0x20)),
    Uint8Array.of(0x0a),
    ...words.map((w) => enc.encode(w)),
    null,
  ];
  const end = bytes.length - 1;
  const masker = new GrammarMasker(
    new TokenTrie({ bytes, endTokens: [end] }),
    new GrammarBuilder().schema(parseSchema({ type: 'boolean' })),
  );
  const c = masker.start();
  const allowed = (remaining: number): string[] => {
    const l = new Float32Array(bytes.length);
    c.mask(l, remaining);
    return [...l.keys()]
      .filter((i) => l[i] === 0)
      .map((i) => (i === end ? '<end>' : new TextDecoder().decode(bytes[i]!)))
      .sort();
  };
  assert.deepEqual(allowed(10), ['f', 'fa', 't', 'tr', 'true']);
  c.accept(word('fa'));
  assert.deepEqual(allowed(10), ['l', 'ls']);
  c.accept('l'.charCodeAt(0) - 0x20);
  assert.deepEqual(allowed(10), ['s', 'se']);
  c.accept(word('se'));
  assert.deepEqual(allowed(10), ['<end>']);
  c.accept(end);
  assert.equal(c.complete, true);
});

test('near the end of the budget only tokens that can still finish stay allowed', () => {
  const { bytes, end } = syntheticByteVocab(1, 800);
  const schema = parseSchema({ type: 'object', properties: { s: { type: 'string' } }, required: ['s'] });
  const masker = new GrammarMasker(new TokenTrie({ bytes, endTokens: [end] }), new GrammarBuilder().schema(schema));
  for (let seed = 0; seed < 20; seed++) {
    const c = masker.start();
    const budget = c.minTokens + (seed % 3);
    const r = new Prng(seed);
    const out: number[] = [];
    for (let left = budget; !c.complete; left--) {
      assert.ok(left > 0, `seed ${seed}: ran out of budget`);
      const l = Float32Array.from(bytes, () => r.normal());
      c.mask(l, left);
      let best = 0;
      for (let i = 1; i < l.length; i++) if (l[i] > l[best]) best = i;
      c.accept(best);
      if (best !== end) out.push(...bytes[best]!);
    }
    const v = JSON.parse(new TextDecoder().decode(Uint8Array.from(out))) as unknown;
    assert.deepEqual(validateJson(v, schema), [], `seed ${seed}`);
  }
});

test('200 seeded requests with random logits: every output is one valid call of a requested tool', async () => {
  const { bytes, end } = syntheticByteVocab(7, 1500);
  const trie = new TokenTrie({ bytes, endTokens: [end] });
  const maskers = new Map<string, GrammarMasker>();
  const stops = new Set([end]);
  const used = new Set<string>();
  for (let seed = 1; seed <= 200; seed++) {
    const r = new Prng(seed);
    const tools = TOOL_POOL.filter(() => r.next() < 0.4);
    if (tools.length === 0) tools.push(TOOL_POOL[r.int(TOOL_POOL.length)]);
    const key = tools.map((t) => t.name).join(',');
    if (!maskers.has(key)) maskers.set(key, new GrammarMasker(trie, toolGrammar(new GrammarBuilder(), tools)));
    const constraint = maskers.get(key)!.start();
    const maxTokens = constraint.minTokens + r.int(200);
    const gen = generate(new PrefixSession(new RandomLogitsSource(bytes.length, seed)), {
      prompt: [1, 2, 3],
      maxTokens,
      sampler: new Sampler({ ...DEFAULT_SAMPLING, seed, temperature: 0.5 + r.next() }, stops),
      detokenizer: new ByteStreamDecoder((id) => bytes[id]),
      stopTokens: stops,
      vocabSize: bytes.length,
      constraint,
    });
    let step = await gen.next();
    let text = '';
    while (!step.done) {
      text += step.value;
      step = await gen.next();
    }
    const label = `seed ${seed}, tools ${key}, max_tokens ${maxTokens}: ${JSON.stringify(text)}`;
    assert.equal(step.value.finishReason, 'stop', label);
    assert.ok(step.value.tokens.length <= maxTokens, label);
    const parser = new ToolCallStreamParser(tools);
    const events = [...parser.push(text), ...parser.end()];
    const calls = events.filter((e) => e.type === 'tool_call');
    assert.deepEqual(
      events.filter((e) => e.type !== 'tool_call'),
      [],
      label,
    );
    assert.equal(calls.length, 1, label);
    const call = calls[0].type === 'tool_call' ? calls[0].call : undefined;
    const tool = tools.find((t) => t.name === call?.name);
    assert.ok(tool && call, label);
    assert.deepEqual(
      validateJson(call.arguments, tool.schema),
      [],
      `${label}: ${formatIssues(validateJson(call.arguments, tool.schema))}`,
    );
    used.add(call.name);
  }
  assert.equal(used.size, TOOL_POOL.length, `every tool was called at least once: ${[...used].join(', ')}`);
});

test('every mask (cached or walked) equals a brute-force check of each token from the exact state', () => {
  const { bytes, end } = syntheticByteVocab(5, 900);
  const trie = new TokenTrie({ bytes, endTokens: [end] });
  const root = toolGrammar(new GrammarBuilder(), TOOL_POOL);
  const masker = new GrammarMasker(trie, root);
  const m = masker.matcher;
  for (let seed = 1; seed <= 25; seed++) {
    const r = new Prng(seed);
    const c = masker.start();
    let state = m.start(root);
    const budget = c.minTokens + r.int(120);
    for (let left = budget; !c.complete; left--) {
      const l = Float32Array.from(bytes, () => r.next());
      c.mask(l, left);
      const want: number[] = [];
      bytes.forEach((b, id) => {
        if (id === end) {
          if (m.accepting(state)) want.push(id);
          return;
        }
        let s = state;
        for (const x of b ?? []) s = m.advance(s, x);
        if (b && s.length > 0 && m.minRemaining(s) <= left - 2) want.push(id);
      });
      const got = [...l.keys()].filter((i) => l[i] > -Infinity);
      assert.deepEqual(got, want, `seed ${seed}, ${left} tokens left`);
      let best = got[0];
      for (const i of got) if (l[i] > l[best]) best = i;
      c.accept(best);
      if (best !== end) for (const x of bytes[best]!) state = m.advance(state, x);
    }
  }
  assert.ok(masker.stats.hits > 0 && masker.stats.misses > 0, JSON.stringify(masker.stats));
});

test('JSON response schemas: 40 seeded random-logit outputs all parse and validate', async () => {
  const { bytes, end } = syntheticByteVocab(3, 1800);
  const trie = new TokenTrie({ bytes, endTokens: [end] });
  const schemas = [
    parseSchema({
      type: 'object',
      properties: { answer: { type: 'string', maxLength: 20 }, confidence: { type: 'number', minimum: 0, maximum: 1 } },
      required: ['answer', 'confidence'],
      additionalProperties: false,
    }),
    parseSchema({ type: 'array', items: { type: 'integer', minimum: -3, maximum: 3 }, minItems: 2, maxItems: 5 }),
    parseSchema({ type: 'integer', minimum: 7, maximum: 7000 }),
    parseSchema({ type: 'object' }),
  ];
  for (let seed = 1; seed <= 40; seed++) {
    const schema = schemas[seed % schemas.length];
    const c = new GrammarMasker(trie, new GrammarBuilder().schema(schema)).start();
    const r = new Prng(seed);
    const out: number[] = [];
    for (let left = c.minTokens + r.int(120); !c.complete; left--) {
      const l = Float32Array.from(bytes, () => 3 * r.normal());
      c.mask(l, left);
      const s = new Sampler({ ...DEFAULT_SAMPLING, seed: seed * 1000 + left });
      const t = s.sample(l);
      c.accept(t);
      if (t !== end) out.push(...bytes[t]!);
    }
    const text = new TextDecoder().decode(Uint8Array.from(out));
    assert.deepEqual(validateJson(JSON.parse(text), schema), [], `seed ${seed}: ${text}`);
  }
});

test('schemas constrained decoding cannot express are clear errors naming the path', () => {
  const b = new GrammarBuilder();
  const cases: Array<[unknown, RegExp]> = [
    [{ type: 'string', pattern: '^a' }, /^\$: constrained decoding does not support "pattern"/],
    [{ type: 'object', properties: { a: { $ref: '#/defs/x' } } }, /\$\.properties\.a\.\$ref/],
    [{ type: 'string', minLength: 5, maxLength: 2 }, /minLength 5 > maxLength 2/],
    [{ type: 'integer', minimum: 2.1, maximum: 2.9 }, /no integer of at most 15 digits lies within the bounds/],
    [{ type: 'string', enum: [1, 2] }, /no enum value satisfies the rest of the schema/],
    [false, /the schema allows no value/],
    [
      { type: 'object', properties: { a: { type: 'string' } }, anyOf: [{ required: ['a'] }] },
      /anyOf\/oneOf next to other constraint keywords/,
    ],
  ];
  for (const [raw, re] of cases)
    assert.throws(
      () => b.schema(parseSchema(raw)),
      (e: unknown) => e instanceof GrammarError && re.test(e.message),
      JSON.stringify(raw),
    );
});

test('schemas that would make grammars or masks explode are refused by size, naming the part', () => {
  const refused = (schema: unknown, want: RegExp) =>
    assert.throws(
      () => new GrammarBuilder().schema(parseSchema(schema)),
      (e: unknown) => e instanceof GrammarError && want.test(e.message),
      JSON.stringify(schema).slice(0, 80),
    );
  refused(
    { enum: Array.from({ length: 1025 }, (_, i) => i) },
    /^\$\.enum: constrained decoding takes at most 1024 values, got 1025$/,
  );
  refused(
    { anyOf: Array.from({ length: 65 }, (_, i) => ({ type: 'number', minimum: i })) },
    /^\$\.anyOf: constrained decoding takes at most 64 alternatives, got 65$/,
  );
  const wide = {
    type: 'object',
    properties: Object.fromEntries(Array.from({ length: 3000 }, (_, i) => [`k${i}`, { type: 'boolean' }])),
  };
  refused(wide, /^\$: the schema needs more than 8192 grammar nodes for constrained decoding; simplify it$/);
  // The largest enum allowed builds (each value checked against the rest of the schema once).
  const ok = new GrammarBuilder().schema(
    parseSchema({ type: 'integer', enum: Array.from({ length: 1024 }, (_, i) => i) }),
  );
  assert.equal(ok.kind, 'alt');
});

test('client patterns run in linear time; those that cannot are refused naming the rule', { timeout: 20_000 }, () => {
  // ^(a+)+$ on 40 a's and a "!" backtracks for hours in a backtracking engine.
  const s = parseSchema({ type: 'string', pattern: '^(a+)+$' });
  assert.equal(validateJson(`${'a'.repeat(40)}!`, s).length, 1);
  assert.equal(validateJson('a'.repeat(40), s).length, 0);
  for (const [pattern, want] of [
    ['^(?=a)a$', /must run in linear time: no lookahead, lookbehind or backreferences/],
    ['(a)\\1', /must run in linear time/],
    ['^\\p{L}+$', /must not use \\p\{…\}, \\u\{…\} or characters past U\+FFFF/],
    ['(', /must be a valid regular expression/],
  ] as const)
    assert.throws(
      () => parseSchema({ pattern }),
      (e: Error) => want.test(e.message),
      pattern,
    );
});
