import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ToolValidator } from '../../../robot/tools/validate.js';
import { openaiTools, toolDefinitions } from '../../../robot/tools/schemas.js';

const one = new ToolValidator(['arm']);
const two = new ToolValidator(['left', 'right']);
const P = [0.3, 0.1, 0.2, 0, 0, 0, 1];

test('accepted forms give one typed, normalised call', () => {
  const q = [0, 0, 0.6, 0.8 * 1.008];
  const r = one.validate(
    `<think>the cup is left</think>\n<tool_call>\n{"name": "move_to", "arguments": {"target": {"pose_xyzquat": [0.3, 0.1, 0.2, ${q.join(', ')}]}, "note": "över 🙂"}}\n</tool_call>`,
  );
  assert.ok(r.ok, r.ok ? '' : r.message);
  if (!r.ok || r.call.tool !== 'move_to') return;
  const n = Math.hypot(...q);
  assert.deepEqual(r.call.target.arm!.position, [0.3, 0.1, 0.2]);
  const o = Array.from(r.call.target.arm!.orientation);
  o.forEach((c, i) => assert.ok(Math.abs(c - q[i]! / n) < 1e-15));
  assert.ok(Math.abs(Math.hypot(...o) - 1) < 1e-15);
  assert.equal(r.call.note, 'över 🙂');
  assert.equal(r.call.source, 'hermes');

  const native = one.validate({
    role: 'assistant',
    content: '',
    tool_calls: [{ id: 'call_9', type: 'function', function: { name: 'get_state', arguments: '' } }],
  });
  assert.deepEqual(native, { ok: true, call: { id: 'call_9', source: 'openai', tool: 'get_state' } });
  const llama = one.validate('{"name": "set_gripper", "parameters": {"gripper": 1}}');
  assert.deepEqual(llama, { ok: true, call: { id: null, source: 'json', tool: 'set_gripper', gripper: { arm: 1 } } });
  const fenced = two.validate(
    '```json\n{"name":"move_eef_chunk","arguments":{"poses":[{"left":{"pose_xyzquat":[0.3,0.1,0.2,0,0,0,1]},"right":null}]}}\n```',
  );
  assert.ok(
    fenced.ok &&
      fenced.call.tool === 'move_eef_chunk' &&
      fenced.call.targets[0]!.right === null &&
      fenced.call.source === 'fenced',
  );
  const plainFence = one.validate('```\n{"name":"stop"}\n```');
  assert.deepEqual(plainFence, { ok: true, call: { id: null, source: 'fenced', tool: 'stop' } });
  const check = two.validate({
    name: 'check_path',
    arguments: { poses: [{ left: null, right: { pose_xyzquat: P } }] },
  });
  assert.ok(check.ok && check.call.tool === 'check_path');
  const done = one.validate({ name: 'done', arguments: '{"summary": "cup placed", "hindsight": "approach slower"}' });
  assert.deepEqual(done, {
    ok: true,
    call: { id: null, source: 'object', tool: 'done', summary: 'cup placed', hindsight: 'approach slower' },
  });
  const content = one.validate({
    role: 'assistant',
    content: '<tool_call>{"name":"stop","arguments":{}}</tool_call>',
    tool_calls: [],
  });
  assert.ok(content.ok && content.call.tool === 'stop');
});

test('quaternion norm: inside [0.99, 1.01] normalised, just outside rejected', () => {
  const at = (s: number) =>
    one.validate({ name: 'move_to', arguments: { target: { pose_xyzquat: [0.3, 0, 0.2, 0, 0, 0, s] } } });
  assert.ok(at(0.99).ok);
  assert.ok(at(1.01).ok);
  assert.match((at(0.9899) as { message: string }).message, /quaternion norm 0\.9899 is outside \[0\.99, 1\.01\]/);
  assert.match((at(1.0101) as { message: string }).message, /quaternion norm 1\.01 is outside/);
});

// Hand-written adversarial replies and the words their rejection must contain.
const HAND: [ToolValidator, unknown, RegExp][] = [
  [one, '', /no tool call found/],
  [one, '   \n ', /no tool call found/],
  [one, '<think>planning…', /<think> block is not closed/],
  [one, '<think>a</think>', /no tool call found/],
  [one, 'move_to(target=[0.3, 0, 0.2])', /no tool call found in the reply "move_to\(target=/],
  [one, 'I cannot do that.', /no tool call found/],
  [one, 'Here you go: {"name":"stop","arguments":{}}', /text before the tool call \("Here you go:"\)/],
  [
    one,
    '<tool_call>{"name":"stop","arguments":{}}</tool_call> and then I will check',
    /text after the tool call \("and then I will check"\)/,
  ],
  [
    one,
    '<tool_call>{"name":"stop","arguments":{}}</tool_call><tool_call>{"name":"get_state","arguments":{}}</tool_call>',
    /2 tool calls in one reply/,
  ],
  [one, '{"name":"stop","arguments":{}}\n{"name":"get_state","arguments":{}}', /more than one JSON object/],
  [
    one,
    '[{"name":"stop","arguments":{}}]',
    /got an array of 1 item; send one tool call object, not an array of decisions/,
  ],
  [one, [], /got an array of 0 items/],
  [one, { tool_calls: [] }, /no tool call found/],
  [one, { tool_calls: 'stop' }, /tool_calls must be an array/],
  [one, { tool_calls: [null] }, /each entry of tool_calls must be an object/],
  [one, { tool_calls: [{ type: 'function', function: null }] }, /function must be an object with name and arguments/],
  [
    one,
    { tool_calls: [{ type: 'function', function: { name: 'stop', arguments: '{"a":' } }] },
    /arguments is not valid JSON: JSON ends early/,
  ],
  [
    one,
    { tool_calls: [{ type: 'function', function: { name: 'stop', arguments: '"{}"' } }] },
    /arguments is a JSON string inside a string/,
  ],
  [
    one,
    '{"name":"move_to","arguments":{"target":{"pose_xyzquat":[0.3,0,0.2,0,0,0,1]},"target":{"pose_xyzquat":[9,9,9,0,0,0,1]}}}',
    /duplicate key "target"/,
  ],
  [
    one,
    '{"name":"move_to","arguments":{"target":{"pose_xyzquat":[NaN,0,0.2,0,0,0,1]}}}',
    /NaN at position \d+ is not valid JSON: numbers must be finite/,
  ],
  [
    one,
    '{"name":"move_to","arguments":{"target":{"pose_xyzquat":[0.3,0,0.2,0,0,0,+1]}}}',
    /unexpected "\+" at position/,
  ],
  [one, '{"name":"move_to","arguments":{"target":{"pose_xyzquat":[0.3,0,.2,0,0,0,1]}}}', /unexpected "\." at position/],
  [one, "{'name':'stop','arguments':{}}", /expected a "quoted" key at position 1, found "'"/],
  [one, '{"name":"stop","arguments":{},}', /expected a "quoted" key/],
  [
    one,
    { name: 'move_to', arguments: { target: { pose_xyzquat: [0.3, 0, 0.2, 0, 0, 0, Number.NaN] } } },
    /pose_xyzquat\[6\]: must be a finite number; NaN and ±Infinity are not allowed, got NaN/,
  ],
  [
    one,
    { name: 'move_to', arguments: { target: { pose_xyzquat: [Infinity, 0, 0.2, 0, 0, 0, 1] } } },
    /pose_xyzquat\[0\]: must be a finite number; NaN and ±Infinity are not allowed, got Infinity/,
  ],
  [
    one,
    { name: 'move_to', arguments: { target: [0.3, 0, 0.2, 0, 0, 0, 1] } },
    /move_to\.target: must be an object, not an array/,
  ],
  [
    one,
    { name: 'move_to', arguments: { target: { pose_xyzquat: P }, speed: 0.1 } },
    /move_to\.speed: is not a known field \(allowed: target, note\)/,
  ],
  [
    one,
    { name: 'move_to', arguments: { target: { pose_xyzquat: P, frame: 'tool' } } },
    /move_to\.target\.frame: is not a known field \(allowed: pose_xyzquat\)/,
  ],
  [
    one,
    { name: 'move_to', arguments: { target: { xyz: [0.3, 0, 0.2], quat: [0, 0, 0, 1] } } },
    /move_to\.target\.pose_xyzquat: is required/,
  ],
  [
    one,
    { name: 'move_to', arguments: { target: { pose_xyzquat: [0, 0, 0, 0, 0, 0, 0] } } },
    /quaternion norm 0 is outside/,
  ],
  [
    one,
    { name: 'move_to', arguments: { target: { pose_xyzquat: [0.3, 0, -12, 0, 0, 0, 1] } } },
    /pose_xyzquat\[2\] \(z\): must be within ±10 m of the robot base \(got -12\)/,
  ],
  [
    one,
    { name: 'move_to', arguments: { target: { pose_xyzquat: P }, note: 'x'.repeat(501) } },
    /move_to\.note: must have at most 500 characters/,
  ],
  [one, { name: 'move_to', arguments: [] }, /move_to: must be an object, not an array/],
  [one, { name: 'move_to', arguments: null }, /move_to: must be an object, not null/],
  [one, { name: 'move_to' }, /move_to\.target: is required/],
  [
    one,
    { name: 'move_eef_chunk', arguments: { poses: Array.from({ length: 65 }, () => ({ pose_xyzquat: P })) } },
    /move_eef_chunk\.poses: must have at most 64 items/,
  ],
  [
    one,
    { name: 'move_eef_chunk', arguments: { target: { pose_xyzquat: P } } },
    /move_eef_chunk\.poses: is required.*move_eef_chunk\.target: is not a known field/,
  ],
  [
    one,
    { name: 'set_gripper', arguments: { gripper: '0.5' } },
    /set_gripper\.gripper: must be a finite number, not a string/,
  ],
  [one, { name: 'set_gripper', arguments: { positions: { arm: 0.5 } } }, /set_gripper\.gripper: is required/],
  [two, { name: 'set_gripper', arguments: { positions: { left: 0.5 } } }, /set_gripper\.positions\.right: is required/],
  [
    two,
    { name: 'set_gripper', arguments: { positions: { left: 0.5, right: 0.5, middle: 0 } } },
    /positions\.middle: is not a known field \(allowed: left, right\)/,
  ],
  [
    two,
    { name: 'move_to', arguments: { target: { pose_xyzquat: P } } },
    /move_to\.target\.left: is required.*move_to\.target\.right: is required/,
  ],
  [
    two,
    { name: 'move_to', arguments: { target: { left: { pose_xyzquat: P }, right: 'hold' } } },
    /move_to\.target\.right: must be an object or null, not a string/,
  ],
  [one, { name: 'done', arguments: { summary: '' } }, /done\.summary: must not be empty/],
  [one, { name: 'done', arguments: {} }, /done\.summary: is required/],
  [one, { name: 'get_state', arguments: { arm: 'left' } }, /get_state\.arm: is not a known field/],
  [
    one,
    { name: 'give_up', arguments: {} },
    /unknown tool "give_up"; the tools are move_to, move_eef_chunk, check_path, set_gripper, get_state, stop, done/,
  ],
  [one, { name: 'Move_To', arguments: {} }, /unknown tool "Move_To".*\(did you mean move_to\?\)/],
  [one, { name: 'mov_to', arguments: {} }, /did you mean move_to\?/],
  [one, { name: 'ｓｔｏｐ', arguments: {} }, /unknown tool "ｓｔｏｐ".*did you mean stop\?/],
  [one, { name: 's\u200btop', arguments: {} }, /did you mean stop\?/],
  [one, { name: 'stop', arguments: {}, extra: 1 }, /unexpected field "extra" in the tool call/],
  [one, { name: 'stop', arguments: {}, parameters: {} }, /"arguments" or "parameters", not both/],
  [one, { arguments: {} }, /the tool call has no "name"/],
  [one, '{"name":"stop","arguments":{"__proto__":{"polluted":true}}}', /stop\.__proto__: is a reserved key/],
  [one, '{"name":"stop","arguments":{"constructor":1}}', /stop\.constructor: is a reserved key/],
  [one, '{"name":"stop","arguments":{"":1}}', /stop\[""\]: is not a known field/],
  [one, 42, /expected a tool call, got number/],
  [one, '"stop"', /no tool call found/],
  [one, '{"name":"stop","arguments":{}} 🤖', /text after the tool call \("🤖"\)/],
];

test(`${HAND.length} hand-written adversarial replies are rejected with a message naming the problem`, () => {
  HAND.forEach(([v, input, re], i) => {
    const r = v.validate(input);
    assert.equal(r.ok, false, `case ${i} accepted: ${JSON.stringify(input)}`);
    if (!r.ok) assert.match(r.message, re, `case ${i}: ${JSON.stringify(input)}\nmessage: ${r.message}`);
  });
  assert.equal(({} as Record<string, unknown>).polluted, undefined);
});

test('tool definitions: single-arm takes bare poses, dual-arm names every arm; OpenAI format', () => {
  const single = toolDefinitions(['arm']);
  assert.deepEqual(
    single.map((d) => d.name),
    ['move_to', 'move_eef_chunk', 'check_path', 'set_gripper', 'get_state', 'stop', 'done'],
  );
  assert.deepEqual(single[0]!.parameters.properties!.target!.required, ['pose_xyzquat']);
  const dual = toolDefinitions(['left', 'right']);
  assert.deepEqual(dual[0]!.parameters.properties!.target!.required, ['left', 'right']);
  assert.deepEqual(dual[0]!.parameters.properties!.target!.properties!.left!.type, ['object', 'null']);
  assert.deepEqual(dual[3]!.parameters.required, ['positions']);
  const oa = openaiTools(['arm']);
  assert.equal(oa[0]!.type, 'function');
  assert.equal(oa[0]!.function.name, 'move_to');
  assert.doesNotThrow(() => JSON.stringify(oa));
  assert.throws(() => toolDefinitions([]), /at least one arm/);
});
