// The scripted provider: tool calls and raw text replayed in order as decisions (malformed ones
// parsed as a model's would be, never fixed), every bad line named by file and line.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ScriptedProvider } from '../../../daemon/policy/providers/scripted.js';
import { ProviderError, type DecisionRequest } from '../../../daemon/policy/providers/types.js';
import { estimateTokens } from '../../../daemon/policy/tokens.js';
import { policyTools } from '../../../daemon/policy/tools.js';
import { ToolValidator } from '../../../robot/tools/validate.js';
import { tempDir } from '../../helpers/temp.js';

const tools = policyTools(['arm']);
const req: DecisionRequest = {
  messages: [
    { role: 'system', text: 'You drive one arm.' },
    { role: 'user', content: [{ type: 'text', text: 'Pick up the block.' }] },
  ],
  tools,
};
const signal = new AbortController().signal;

function script(lines: string[]): { file: string; remove(): void } {
  const dir = tempDir('bs-script-');
  const file = join(dir.path, 'decisions.jsonl');
  writeFileSync(file, lines.join('\n'));
  return { file, remove: dir.remove };
}

const isScriptError = (re: RegExp) => (e: unknown) =>
  e instanceof ProviderError && e.kind === 'script' && re.test(e.message);

test('replays calls and raw text in order; malformed output stays as it came and fails to parse', async () => {
  const s = script([
    '{"name": "move_to", "arguments": {"target": {"pose_xyzquat": [0.3, 0, 0.2, 0, 0, 0, 1]}}}',
    '',
    '{"raw": "<tool_call>{\\"name\\": \\"get_state\\", \\"arguments\\": {}}</tool_call>"}',
    '"I think I should move the arm first."',
    '{"name": "set_gripper", "arguments": "{\\"gripper\\": 0.5,"}',
    '{"name": "done", "id": "final", "arguments": {"summary": "in the bowl"}}',
  ]);
  try {
    let t = 0;
    const p = await ScriptedProvider.load(s.file, { clock: () => (t += 5) });
    assert.equal(p.remaining, 5);
    const validator = new ToolValidator(['arm']);

    const move = await p.decide(req, signal);
    assert.deepEqual(move.call, {
      ok: true,
      id: 'call_script_1',
      name: 'move_to',
      arguments: { target: { pose_xyzquat: [0.3, 0, 0.2, 0, 0, 0, 1] } },
    });
    assert.deepEqual(move.message, { role: 'assistant', text: '', toolCall: move.toolCalls[0] });
    assert.equal(move.raw, '{"name":"move_to","arguments":{"target":{"pose_xyzquat":[0.3,0,0.2,0,0,0,1]}}}');
    assert.ok(
      validator.validate({ name: move.call.ok && move.call.name, arguments: move.call.ok && move.call.arguments }).ok,
    );
    assert.deepEqual(move.usage, {
      promptTokens: estimateTokens(req.messages, tools),
      completionTokens: Math.ceil(move.raw.length / 4),
      estimated: true,
    });
    assert.deepEqual(move.timing, { totalMs: 5, attempts: 1 });

    // A Hermes call in text parses like a model's; the history gets it as a call with an id.
    const hermes = await p.decide(req, signal);
    assert.deepEqual(hermes.call, { ok: true, id: 'call_script_3', name: 'get_state', arguments: {} });
    assert.equal(hermes.toolCalls.length, 0);
    assert.deepEqual(hermes.message.toolCall, { id: 'call_script_3', name: 'get_state', arguments: '{}' });

    const prose = await p.decide(req, signal);
    assert.equal(prose.raw, 'I think I should move the arm first.');
    assert.equal(prose.call.ok, false);
    assert.equal(!prose.call.ok && prose.call.code, 'empty');
    assert.deepEqual(prose.message, { role: 'assistant', text: 'I think I should move the arm first.' });

    const broken = await p.decide(req, signal);
    assert.equal(broken.raw, '{"name":"set_gripper","arguments":{"gripper": 0.5,}');
    assert.ok(!broken.call.ok && broken.call.code === 'arguments', JSON.stringify(broken.call));
    assert.match(!broken.call.ok ? broken.call.message : '', /arguments is not valid JSON/);
    assert.equal(broken.message.toolCall, undefined);

    const done = await p.decide(req, signal);
    assert.deepEqual(done.call, { ok: true, id: 'final', name: 'done', arguments: { summary: 'in the bowl' } });
    assert.equal(p.remaining, 0);
    await assert.rejects(
      p.decide(req, signal),
      isScriptError(/decisions\.jsonl: all 5 decisions are used; the episode asked for decision 6/),
    );
  } finally {
    s.remove();
  }
});

test('a bad script fails at load, naming the file and the line', async () => {
  const cases: [string[], RegExp][] = [
    [['{"name": "get_state"}', '{"name": "move_to", "arguments": {'], /decisions\.jsonl:2: not JSON: JSON ends early/],
    [
      ['{"name": "get_state"}', '', '[1, 2]'],
      /decisions\.jsonl:3: expected \{"name": "<tool>", "arguments": \{\.\.\.\}\}, \{"raw": "<text>"\} or a JSON string, got \[1,2\]/,
    ],
    [['{"tool": "get_state"}'], /decisions\.jsonl:1: unknown key "tool"/],
    [['{"name": 7}'], /decisions\.jsonl:1: name: must be the tool name as a non-empty string, got 7/],
    [['{"raw": "x", "name": "done"}'], /decisions\.jsonl:1: raw: must be the only key/],
    [['', '  '], /decisions\.jsonl: no decisions in the file/],
  ];
  for (const [lines, re] of cases) {
    const s = script(lines);
    try {
      await assert.rejects(ScriptedProvider.load(s.file), isScriptError(re), re.source);
    } finally {
      s.remove();
    }
  }
  await assert.rejects(
    ScriptedProvider.load('/nonexistent/decisions.jsonl'),
    isScriptError(/\/nonexistent\/decisions\.jsonl: cannot read the script \(ENOENT\)/),
  );
});

test('a cancelled decide is an aborted error and uses no decision', async () => {
  const s = script(['{"name": "get_state"}']);
  try {
    const p = await ScriptedProvider.load(s.file);
    const ac = new AbortController();
    ac.abort();
    await assert.rejects(p.decide(req, ac.signal), (e: unknown) => e instanceof ProviderError && e.kind === 'aborted');
    assert.equal(p.remaining, 1);
  } finally {
    s.remove();
  }
});
