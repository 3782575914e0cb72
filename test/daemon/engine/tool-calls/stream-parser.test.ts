import { test } from 'node:test';
import assert from 'node:assert/strict';
import { type ParserEvent, ToolCallStreamParser } from '../../../../daemon/engine/tool-calls/stream-parser.js';
import { parseTools } from '../../../../daemon/engine/tool-calls/tools.js';
import { Prng } from '../../../../robot/common/prng.js';

const TOOLS = parseTools([
  {
    type: 'function',
    function: {
      name: 'move_to',
      parameters: {
        type: 'object',
        properties: {
          target: { type: 'array', items: { type: 'number' }, minItems: 3, maxItems: 3 },
          speed: { type: 'number', minimum: 0, maximum: 1 },
          note: { type: 'string' },
          opts: { type: 'object', properties: { safe: { type: 'boolean' } }, additionalProperties: false },
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
          arm: { enum: ['left', 'right'] },
          hold: { type: ['boolean', 'null'] },
        },
        required: ['gripper'],
      },
    },
  },
]);

interface Outcome {
  content: string;
  calls: Array<{ name: string; arguments: unknown; format: string }>;
  errors: string[];
}

function run(chunks: string[], cut = false): Outcome {
  const p = new ToolCallStreamParser(TOOLS);
  const events: ParserEvent[] = [];
  for (const c of chunks) events.push(...p.push(c));
  events.push(...p.end(cut));
  const out: Outcome = { content: '', calls: [], errors: [] };
  for (const e of events) {
    if (e.type === 'content') out.content += e.text;
    else if (e.type === 'tool_call')
      out.calls.push({ name: e.call.name, arguments: e.call.arguments, format: e.call.format });
    else out.errors.push(`${e.error.code}: ${e.error.message}`);
  }
  return out;
}

/** Every split into two chunks, every split into single characters, and seeded random splits. */
function splits(text: string): string[][] {
  const chars = [...text];
  const out: string[][] = [[text], chars];
  for (let i = 1; i < chars.length; i++) out.push([chars.slice(0, i).join(''), chars.slice(i).join('')]);
  const r = new Prng(text.length);
  for (let k = 0; k < 30; k++) {
    const parts: string[] = [];
    let at = 0;
    while (at < chars.length) {
      const n = 1 + r.int(6);
      parts.push(chars.slice(at, at + n).join(''));
      at += n;
    }
    out.push(parts);
  }
  return out;
}

function assertEverySplit(text: string, expected: Outcome): void {
  for (const chunks of splits(text)) assert.deepEqual(run(chunks), expected, `chunks ${JSON.stringify(chunks)}`);
}

test('Hermes call with text around it, at every chunk boundary', () => {
  const text =
    'Moving now.\n<tool_call>\n{"name": "move_to", "arguments": {"target": [0.1, -0.2, 0.3], "note": "a } ] \\" </tool_call> <b"}}\n</tool_call>\nDone <b>.';
  assertEverySplit(text, {
    content: 'Moving now.\nDone <b>.', // the newline before the call is layout
    calls: [
      { name: 'move_to', arguments: { target: [0.1, -0.2, 0.3], note: 'a } ] " </tool_call> <b' }, format: 'hermes' },
    ],
    errors: [],
  });
});

test('Hermes arguments given as a JSON string, and two calls in a row', () => {
  const text =
    '<tool_call>{"name": "set_gripper", "arguments": "{\\"gripper\\": 0.5}"}</tool_call><tool_call>\n{"name": "move_to", "arguments": {"target": [1, 2, 3], "opts": {"safe": true}}}\n</tool_call>';
  assertEverySplit(text, {
    content: '',
    calls: [
      { name: 'set_gripper', arguments: { gripper: 0.5 }, format: 'hermes' },
      { name: 'move_to', arguments: { target: [1, 2, 3], opts: { safe: true } }, format: 'hermes' },
    ],
    errors: [],
  });
});

test('Qwen3-Coder XML call: parameters coerced by the schema, at every chunk boundary', () => {
  const text =
    'ok <tool_call>\n<function=move_to>\n<parameter=target>\n[0.5, 0, 1]\n</parameter>\n<parameter=speed>\n0.25\n</parameter>\n<parameter=note>\n  two\nlines  \n</parameter>\n<parameter=opts>\n{"safe": false}\n</parameter>\n</function>\n</tool_call>';
  assertEverySplit(text, {
    content: 'ok',
    calls: [
      {
        name: 'move_to',
        arguments: { target: [0.5, 0, 1], speed: 0.25, note: '  two\nlines  ', opts: { safe: false } },
        format: 'xml',
      },
    ],
    errors: [],
  });
});

test('bare <function=...> without <tool_call>, with an optional stray closing tag', () => {
  const text =
    '<function=set_gripper><parameter=gripper>1</parameter><parameter=arm>left</parameter><parameter=hold>null</parameter></function>\n</tool_call> bye';
  assertEverySplit(text, {
    content: ' bye',
    calls: [{ name: 'set_gripper', arguments: { gripper: 1, arm: 'left', hold: null }, format: 'xml' }],
    errors: [],
  });
  assert.deepEqual(run(['<function=set_gripper><parameter=gripper>0</parameter></function> <b']), {
    content: ' <b',
    calls: [{ name: 'set_gripper', arguments: { gripper: 0 }, format: 'xml' }],
    errors: [],
  });
});

test('text that only looks like a tag start is content', () => {
  assertEverySplit('a <tool b </tool_cal <function x <', {
    content: 'a <tool b </tool_cal <function x <',
    calls: [],
    errors: [],
  });
});

const MALFORMED: Array<[string, RegExp]> = [
  [
    '<tool_call>{"name": "move_to", "arguments": {"target": [1, 2, 3]}}',
    /^unclosed_tag: .*never closed by <\/tool_call>/,
  ],
  ['<tool_call>\n{"name": "move_to", "arguments": {"target": [1, 2', /^unclosed_tag/],
  ['<function=move_to><parameter=target>[1,2,3]</parameter>', /^unclosed_tag: .*<function=\.\.\.> is never closed/],
  [
    '<tool_call>{"name": "move_to", "arguments": {"target": [1, 2, 3]},}</tool_call>',
    /^invalid_json: the tool call is not valid JSON/,
  ],
  [
    '<tool_call>{"name": "move_to", "arguments": "{target: 1}"}</tool_call>',
    /^invalid_json: the arguments string of move_to is not valid JSON/,
  ],
  [
    '<tool_call>Sure! {"name": "move_to"}</tool_call>',
    /^invalid_call: expected a JSON object or <function=\.\.\.> after <tool_call>, got "S"/,
  ],
  [
    '<tool_call>{"name": "move_to", "arguments": {"target": [1, 2, 3]}} trailing</tool_call>',
    /^invalid_call: unexpected text after the tool call's JSON object: "t"/,
  ],
  [
    '<tool_call>{"name": "move_to", "arguments": {"target": [1,2,3]}}{"name": "x"}</tool_call>',
    /^invalid_call: unexpected text after/,
  ],
  [
    '<tool_call>{"name": "move_to", "arguments": {"target": [1, 2, 3]}, "id": 7}</tool_call>',
    /^invalid_call: unexpected keys in the tool call: id/,
  ],
  ['<tool_call>{"arguments": {}}</tool_call>', /^invalid_call: the tool call needs a "name" string/],
  ['<tool_call>{"name": "move_to"}</tool_call>', /^invalid_call: the call of move_to has no "arguments"/],
  ['<tool_call>[{"name": "move_to"}]</tool_call>', /^invalid_call: expected a JSON object/],
  [
    '<tool_call>{"name": "fly", "arguments": {}}</tool_call>',
    /^unknown_tool: unknown tool "fly" \(available: move_to, set_gripper\)/,
  ],
  [
    '<tool_call>{"name": "move_to", "arguments": {"target": [1, 2]}}</tool_call>',
    /^invalid_arguments: move_to: \$\.target: must have at least 3 items, got \[1,2\]/,
  ],
  [
    '<tool_call>{"name": "move_to", "arguments": {"target": ["1", 2, 3]}}</tool_call>',
    /^invalid_arguments: move_to: \$\.target\[0\]: must be a finite number, not a string, got "1"/,
  ],
  [
    '<tool_call>{"name": "move_to", "arguments": {"target": [1, 2, 3], "opts": {"safe": true, "x": {"deep": [1, {"a": 2}]}}}}</tool_call>',
    /^invalid_arguments: move_to: \$\.opts\.x: is not a known field \(allowed: safe\), got \{"deep"/,
  ],
  [
    '<tool_call>{"name": "move_to", "arguments": {"target": [1, 2, 3], "extra": 1}}</tool_call>',
    /^invalid_arguments: .*\$\.extra: is not a known field/,
  ],
  [
    '<tool_call>{"name": "move_to", "arguments": []}</tool_call>',
    /^invalid_arguments: the arguments of move_to must be a JSON object, got \[\]/,
  ],
  [
    '<tool_call><function=move_to><parameter=target>[1, 2, 3]</parameter><parameter=speed>fast</parameter></function></tool_call>',
    /^invalid_arguments: move_to: \$\.speed: must be a finite number, got "fast"/,
  ],
  [
    '<tool_call><function=move_to><parameter=target>[1, 2, 3]</parameter><parameter=target>[1, 2, 3]</parameter></function></tool_call>',
    /^invalid_arguments: parameter target of move_to is given twice/,
  ],
  [
    '<tool_call><function=move_to><parameter=target>[1, 2, 3]</parameter>junk</function></tool_call>',
    /^invalid_call: unexpected text inside <function=move_to>: "junk/,
  ],
  [
    '<tool_call><function=move_to><parameter=target>[1, 2, 3]</function></tool_call>',
    /^unclosed_tag: <parameter=target> of move_to is never closed/,
  ],
  [
    '<tool_call><function=move_to><parameter=target>[1, 2, 3]</parameter></function> x</tool_call>',
    /^invalid_call: unexpected text after <\/function> of move_to: "x"/,
  ],
  ['<tool_call><function=>x</function></tool_call>', /^invalid_call: malformed function tag/],
  [
    '<tool_call><function=set_gripper><parameter=arm>up</parameter><parameter=gripper>1</parameter></function></tool_call>',
    /^invalid_arguments: set_gripper: \$\.arm: must be one of "left", "right", got "up"/,
  ],
  [
    '<tool_call><function=set_gripper><parameter=gripper>2</parameter></function></tool_call>',
    /^invalid_arguments: set_gripper: \$\.gripper: must be ≤ 1, got 2/,
  ],
  ['hello </tool_call>', /^unexpected_tag: <\/tool_call> without an opening <tool_call>/],
];

test('malformed and adversarial calls become typed errors, never text', () => {
  for (const [text, re] of MALFORMED) {
    for (const chunks of [[text], [...text]]) {
      const out = run(chunks);
      assert.equal(out.calls.length, 0, `${text}: no call may come out`);
      assert.equal(out.errors.length, 1, `${text}: ${JSON.stringify(out)}`);
      assert.match(out.errors[0], re, text);
    }
  }
});

test('content before a malformed call is kept and nothing after the error is parsed', () => {
  const out = run([
    'Let me try. <tool_call>{"name": "fly", "arguments": {}}</tool_call> then <tool_call>{"name": "move_to", "arguments": {"target": [1,2,3]}}</tool_call>',
  ]);
  assert.equal(out.content, 'Let me try. ');
  assert.deepEqual(out.calls, []);
  assert.equal(out.errors.length, 1);
});

test('errors carry the raw call text and the tool name', () => {
  const p = new ToolCallStreamParser(TOOLS);
  const events = [...p.push('<tool_call>{"name": "move_to", "arguments": {"target": 5}}</tool_call>'), ...p.end()];
  const err = events.find((e) => e.type === 'error');
  assert.ok(err && err.type === 'error');
  assert.equal(err.error.tool, 'move_to');
  assert.equal(err.error.raw, '<tool_call>{"name": "move_to", "arguments": {"target": 5}}</tool_call>');
  assert.deepEqual(
    err.error.issues.map((i) => [i.path, i.rule]),
    [['$.target', 'must be an array, not a number']],
  );
});

test('malformed calls give the same single error wherever the stream is split', () => {
  for (const [text, re] of MALFORMED) {
    const first = run([text]);
    for (const chunks of splits(text)) {
      const out = run(chunks);
      assert.deepEqual(out, first, `chunks ${JSON.stringify(chunks)}`);
      assert.match(out.errors[0] ?? '', re, JSON.stringify(chunks));
    }
  }
});

test('adversarial streams: nested tags, deep nesting and long garbage end in one error without throwing', () => {
  const deep = '['.repeat(5000);
  const cases: Array<[string, RegExp]> = [
    [
      '<tool_call><tool_call>{"name": "move_to", "arguments": {"target": [1, 2, 3]}}</tool_call></tool_call>',
      /^invalid_call: expected <function=NAME>, got "<tool_call>/,
    ],
    [
      '<tool_call>{"name": "move_to", "arguments": {"target": [1, 2, 3], "note": "<tool_call>{}</tool_call>"}}</tool_call>',
      /^$/,
    ],
    [`<tool_call>{"name": "move_to", "arguments": {"target": ${deep}`, /^unclosed_tag/],
    [
      `<tool_call>{"name": "move_to", "arguments": {"target": [1, 2, 3], "opts": ${'{"a": '.repeat(300)}1${'}'.repeat(300)}}}</tool_call>`,
      /^invalid_arguments: move_to: \$\.opts\.a: is not a known field \(allowed: safe\)/,
    ],
    [
      '<function=move_to><function=move_to><parameter=target>[1,2,3]</parameter></function></function>',
      /^invalid_call: unexpected text inside <function=move_to>/,
    ],
    [`<tool_call>${'x'.repeat(20_000)}`, /^invalid_call: expected a JSON object/],
    [
      '<tool_call>\n{"name": "move_to", "arguments": {"target": [1e999, 2, 3]}}\n</tool_call>',
      /^invalid_arguments|^invalid_json/,
    ],
    ['<tool_call>{"name": "m\u006fve_to", "arguments": {"target": [1, 2, 3]}}</tool_call>', /^$/],
    [
      '<tool_call>{"name": "move_to", "name": "fly", "arguments": {"target": [1, 2, 3]}}</tool_call>',
      /^unknown_tool|^invalid_call/,
    ],
  ];
  for (const [text, re] of cases) {
    for (const chunks of [[text], [...text], [text.slice(0, 7), text.slice(7)]]) {
      let out: Outcome | undefined;
      assert.doesNotThrow(() => (out = run(chunks)), text.slice(0, 80));
      assert.ok(out!.errors.length <= 1, `${text.slice(0, 80)}: ${out!.errors}`);
      assert.match(out!.errors[0] ?? '', re, text.slice(0, 80));
      if (out!.errors.length === 1)
        assert.equal(out!.calls.length, 0, 'a call after or inside an error never comes out');
    }
  }
});

test('seeded soups of tag and JSON fragments: the outcome never depends on the chunking', () => {
  const pieces = [
    '<tool_call>',
    '</tool_call>',
    '<function=move_to>',
    '<function=set_gripper>',
    '</function>',
    '<parameter=target>',
    '<parameter=gripper>',
    '</parameter>',
    '{"name": "move_to", "arguments": {"target": [1, 2, 3]}}',
    '{"name": "set_gripper", "arguments": {"gripper": 0.5}}',
    '[1, 2, 3]',
    '0.5',
    '{',
    '}',
    '"',
    '\\',
    '<',
    '>',
    '\n',
    ' ',
    'text',
    '</tool',
    '<tool_',
  ];
  for (let seed = 1; seed <= 300; seed++) {
    const r = new Prng(seed);
    const text = Array.from({ length: 1 + r.int(12) }, () => pieces[r.int(pieces.length)]).join('');
    const whole = run([text]);
    assert.ok(whole.errors.length <= 1, `seed ${seed}: ${JSON.stringify(text)}`);
    for (const chunks of [
      [...text],
      splits(text)[2 + r.int(Math.max(1, text.length - 1))] ?? [text],
      splits(text).at(-1)!,
    ]) {
      assert.deepEqual(run(chunks), whole, `seed ${seed}: ${JSON.stringify(chunks)}`);
    }
  }
});

test('two calls on separate lines: the whitespace between and around them is not content', () => {
  const text =
    '\n<tool_call>\n{"name": "set_gripper", "arguments": {"gripper": 0}}\n</tool_call>\n<tool_call>\n{"name": "set_gripper", "arguments": {"gripper": 1}}\n</tool_call>\n';
  for (const chunks of splits(text)) {
    const out = run(chunks);
    assert.deepEqual([out.content, out.calls.length, out.errors], ['', 2, []], `chunks ${JSON.stringify(chunks)}`);
  }
});

test('an unfinished call is an error when the model ended; its text is content when the output was cut', () => {
  const text = 'Sure.\n<tool_call>\n{"name": "move_to", "arguments": {"tar';
  for (const chunks of splits(text)) {
    const ended = run(chunks);
    assert.equal(ended.errors.length, 1, `chunks ${JSON.stringify(chunks)}`);
    assert.match(ended.errors[0]!, /^unclosed_tag: /);
    assert.deepEqual(run(chunks, true), { content: text, calls: [], errors: [] }, `chunks ${JSON.stringify(chunks)}`);
  }
});
