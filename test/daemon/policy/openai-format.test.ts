// Policy messages in OpenAI's shapes: images as data URLs (or placeholders for text-only models),
// tool results paired with their calls, unpaired ones as user text; one reply read as one call.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { decisionOf, parseReply, toOpenAiMessages } from '../../../daemon/policy/providers/openai-format.js';
import type { PolicyMessage } from '../../../daemon/policy/providers/types.js';
import { checkLoopToolArguments, loopTools, policyTools } from '../../../daemon/policy/tools.js';
import { TOOL_NAMES } from '../../../robot/tools/schemas.js';

const messages: PolicyMessage[] = [
  { role: 'system', text: 'sys' },
  {
    role: 'user',
    content: [
      { type: 'text', text: 'goal:' },
      {
        type: 'image',
        image: { mime: 'image/jpeg', bytes: Uint8Array.of(0xff, 0xd8, 0xff) },
        label: 'goal',
        detail: 'high',
      },
      { type: 'image', image: { url: 'data:image/png;base64,iVBO' }, label: 'top, decision 1' },
    ],
  },
  { role: 'assistant', text: '', toolCall: { id: 'c1', name: 'get_state', arguments: '' } },
  { role: 'tool', toolCallId: 'c1', name: 'get_state', text: '{"status":"ok"}' },
  { role: 'assistant', text: '', toolCall: { id: 'c2', name: 'set_gripper', arguments: '{"gripper": 0.5,' } },
  { role: 'tool', toolCallId: 'c2', name: 'set_gripper', text: 'Rejected: arguments is not valid JSON' },
  { role: 'tool', toolCallId: 'c9', name: 'done', text: 'Rejected: the check failed' },
];

test('OpenAI messages: data URLs, paired tool results, unpaired ones as user text', () => {
  const out = toOpenAiMessages(messages, { images: 'url' });
  assert.deepEqual(out[1]!.content, [
    { type: 'text', text: 'goal:' },
    { type: 'image_url', image_url: { url: 'data:image/jpeg;base64,/9j/', detail: 'high' } },
    { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBO' } },
  ]);
  assert.deepEqual(out[2], {
    role: 'assistant',
    content: null,
    tool_calls: [{ id: 'c1', type: 'function', function: { name: 'get_state', arguments: '' } }],
  });
  assert.deepEqual(out[3], { role: 'tool', tool_call_id: 'c1', content: '{"status":"ok"}' });
  // Servers take any arguments text back as the model sent it.
  assert.equal(
    (out[4]!.tool_calls as { function: { arguments: string } }[])[0]!.function.arguments,
    '{"gripper": 0.5,',
  );
  assert.deepEqual(out[6], { role: 'user', content: 'Result of done: Rejected: the check failed' });
});

test('text-only models: images become placeholders; a call whose arguments are not an object stays text', () => {
  const out = toOpenAiMessages(messages, { images: 'text' });
  assert.deepEqual(out[1]!.content, [
    { type: 'text', text: 'goal:' },
    { type: 'text', text: '[image not shown: goal]' },
    { type: 'text', text: '[image not shown: top, decision 1]' },
  ]);
  // Chat templates parse arguments: broken JSON goes as the assistant's text, its result as user text.
  assert.deepEqual(out[4], { role: 'assistant', content: '{"name":"set_gripper","arguments":{"gripper": 0.5,}' });
  assert.deepEqual(out[5], { role: 'user', content: 'Result of set_gripper: Rejected: arguments is not valid JSON' });
  assert.equal(out[2]!.role, 'assistant');
  assert.equal(out[3]!.role, 'tool');
});

test('a reply is one call: several native calls or prose are refused with the reason', () => {
  const id = () => 'new';
  const two = parseReply(
    '',
    [
      { id: 'a', name: 'get_state', arguments: '{}' },
      { id: 'b', name: 'stop', arguments: '{}' },
    ],
    id,
  );
  assert.deepEqual(two, {
    ok: false,
    code: 'several',
    message: '2 tool calls in one reply; send exactly one tool call per reply',
  });
  assert.deepEqual(parseReply('```json\n{"name": "stop", "arguments": {}}\n```', [], id), {
    ok: true,
    id: 'new',
    name: 'stop',
    arguments: {},
  });
  assert.equal(parseReply('Sure! {"name": "stop"}', [], id).ok, false);
});

test('arguments that are not an object (null, an array, a number) are a malformed call, not a call with {}', () => {
  const id = () => 'new';
  const native = (args: string) => parseReply('', [{ id: 'a', name: 'get_state', arguments: args }], id);
  for (const [args, what] of [
    ['null', 'null'],
    ['[]', 'an array'],
    ['[{"gripper": 1}]', 'an array'],
    ['7', 'a number'],
    ['true', 'a boolean'],
  ])
    assert.deepEqual(native(args), {
      ok: false,
      code: 'arguments',
      message: `arguments must be a JSON object ({...}), got ${what}`,
    });
  assert.deepEqual(parseReply('{"name": "get_state", "arguments": null}', [], id), {
    ok: false,
    code: 'arguments',
    message: 'arguments must be a JSON object ({...}), got null',
  });
  // Absent or empty arguments stay {}.
  for (const args of ['', '{}'])
    assert.deepEqual(native(args), { ok: true, id: 'a', name: 'get_state', arguments: {} });
  assert.deepEqual(parseReply('{"name": "get_state"}', [], id), {
    ok: true,
    id: 'new',
    name: 'get_state',
    arguments: {},
  });
  // The decision is malformed and its history message keeps the text as the model wrote it.
  const d = decisionOf(
    { provider: 'p', model: 'm' },
    { content: '', toolCalls: [{ id: 'a', name: 'get_state', arguments: 'null' }], finishReason: 'tool_calls' },
    { promptTokens: 0, completionTokens: 0 },
    { totalMs: 0, attempts: 1 },
    id,
  );
  assert.equal(d.call.ok, false);
  assert.deepEqual(d.message, { role: 'assistant', text: '{"name":"get_state","arguments":null}' });
});

test('policy tools: the robot’s seven, give_up, and locate_point over the named cameras', () => {
  const names = policyTools(['arm'], ['top', 'wrist']).map((t) => t.name);
  assert.deepEqual(names, [...TOOL_NAMES, 'give_up', 'locate_point']);
  assert.deepEqual(
    policyTools(['arm']).map((t) => t.name),
    [...TOOL_NAMES, 'give_up'],
  );
  const [giveUp, locate] = loopTools(['top']);
  assert.equal(checkLoopToolArguments(giveUp!, { reason: 'the bowl is out of reach' }), null);
  assert.match(checkLoopToolArguments(giveUp!, {})!, /reason/);
  assert.equal(checkLoopToolArguments(locate!, { camera: 'top', u: 320, v: 240.5 }), null);
  assert.match(checkLoopToolArguments(locate!, { camera: 'side', u: 1, v: 2 })!, /camera.*top/);
  assert.match(checkLoopToolArguments(locate!, { camera: 'top', u: -1, v: 2 })!, /u/);
});
