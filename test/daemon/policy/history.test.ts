// The history policy: references always whole, only the newest N online images, older turns as a
// deterministic host summary, tool results paired with their calls, and the prompt inside the context.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  compileHistory,
  type EpisodeHistory,
  HistoryBudgetError,
  summarise,
  type Turn,
} from '../../../daemon/policy/history.js';
import type { ContentPart, PolicyMessage } from '../../../daemon/policy/providers/types.js';
import { toOpenAiMessages } from '../../../daemon/policy/providers/openai-format.js';
import { estimateTokens } from '../../../daemon/policy/tokens.js';
import { policyTools } from '../../../daemon/policy/tools.js';

const tools = policyTools(['arm'], ['top']);
const image = (label: string): ContentPart => ({
  type: 'image',
  image: { mime: 'image/png', bytes: Uint8Array.of(1, 2, 3) },
  label,
});

/** Turn i: an observation with one top-camera frame, a move_to call and its outcome; every third is rejected. */
function turn(i: number, current = false): Turn {
  const observation: ContentPart[] = [{ type: 'text', text: `observation ${i}` }, image(`top, turn ${i}`)];
  if (current) return { observation };
  const status = i % 3 === 0 ? 'rejected' : 'ok';
  return {
    observation,
    reply: {
      role: 'assistant',
      text: '',
      toolCall: { id: `c${i}`, name: i % 2 ? 'move_to' : 'set_gripper', arguments: '{}' },
    },
    result: { tool: i % 2 ? 'move_to' : 'set_gripper', status, text: `outcome ${i}: ${status}` },
  };
}

function episode(turns: number): EpisodeHistory {
  return {
    system: 'You drive one arm.',
    references: [{ type: 'text', text: 'Put the block in the bowl.' }, image('goal'), image('demo keyframe 1')],
    turns: [...Array.from({ length: turns }, (_, i) => turn(i + 1)), turn(turns + 1, true)],
  };
}

const imagesOf = (ms: PolicyMessage[]) =>
  ms.flatMap((m) => (m.role === 'user' ? m.content.filter((p) => p.type === 'image').map((p) => p.label) : []));
const textOf = (ms: PolicyMessage[]) =>
  ms
    .map((m) =>
      m.role === 'user' ? m.content.map((p) => (p.type === 'text' ? p.text : `<${p.label}>`)).join('|') : '',
    )
    .join('\n');

test('within the window: every turn verbatim, calls paired with their results, only the last N online images', () => {
  const p = compileHistory(episode(4), { tools, keepImages: 2, windowTurns: 10 });
  const exchange = ['user', 'assistant', 'tool'];
  assert.deepEqual(
    p.messages.map((m) => m.role),
    ['system', ...exchange, ...exchange, ...exchange, ...exchange, 'user'],
  );
  // References open the first user turn and are never counted against N.
  assert.deepEqual(imagesOf(p.messages), ['goal', 'demo keyframe 1', 'top, turn 4', 'top, turn 5']);
  assert.deepEqual(p.dropped, {
    summarisedTurns: 0,
    trimmedForContext: 0,
    images: ['top, turn 1', 'top, turn 2', 'top, turn 3'],
  });
  assert.match(textOf(p.messages), /observation 1\|\[image not shown: top, turn 1\]/);
  const tool = p.messages[3]!;
  assert.deepEqual(tool, { role: 'tool', toolCallId: 'c1', name: 'move_to', text: 'outcome 1: ok' });
  assert.deepEqual(p.counts, { turns: 5, decisions: 4 });
  assert.equal(p.summary, null);
  assert.equal(p.tokens, estimateTokens(p.messages, tools));
});

test('turns older than the window become one host summary; counts stay those of the whole episode', () => {
  const p = compileHistory(episode(9), { tools, keepImages: 3, windowTurns: 3 });
  assert.equal(p.dropped.summarisedTurns, 7);
  assert.deepEqual(p.counts, { turns: 10, decisions: 9 });
  assert.equal(
    p.summary,
    'Host summary of turns 1–7 (their images and full text are no longer shown): 7 decisions; ' +
      'tools called: move_to ×4, set_gripper ×3; outcomes: ok ×5, rejected ×2.\n' +
      'Last summarised outcome (turn 7, move_to, ok): outcome 7: ok',
  );
  const first = p.messages[1]!;
  assert.equal(first.role, 'user');
  // References, then the summary, then the oldest kept observation, all in one user turn.
  assert.match(
    textOf([first]),
    /^Put the block in the bowl\.\|<goal>\|<demo keyframe 1>\|Host summary of turns 1–7.*\|observation 8\|<top, turn 8>$/s,
  );
  assert.deepEqual(imagesOf(p.messages), ['goal', 'demo keyframe 1', 'top, turn 8', 'top, turn 9', 'top, turn 10']);
  assert.equal(p.dropped.images.length, 7);
  // Deterministic: the same turns give the same text, also when built anew.
  assert.equal(summarise(episode(9).turns.slice(0, 7)), p.summary);
  assert.deepEqual(compileHistory(episode(9), { tools, keepImages: 3, windowTurns: 3 }), p);
});

test('summarised in blocks: between blocks each prompt, as a text-only model reads it, extends the previous one', () => {
  const o = { tools, keepImages: 2, windowTurns: 6, summaryBlock: 3 };
  const h = episode(0);
  const summarised: number[] = [];
  let previous: unknown[] = [];
  for (let i = 1; i <= 14; i++) {
    h.turns = [...h.turns.slice(0, -1), ...(i > 1 ? [turn(i - 1)] : []), turn(i, true)];
    const p = compileHistory(h, o);
    const verbatim = i - p.dropped.summarisedTurns;
    assert.ok(verbatim >= Math.min(i, 4) && verbatim <= 6, `decision ${i}: ${verbatim} turns verbatim`);
    const sent = toOpenAiMessages(p.messages, { images: 'text' });
    if (p.dropped.summarisedTurns === summarised.at(-1))
      assert.deepEqual(sent.slice(0, previous.length), previous, `decision ${i}`);
    summarised.push(p.dropped.summarisedTurns);
    previous = sent;
  }
  assert.deepEqual(summarised, [0, 0, 0, 0, 0, 0, 3, 3, 3, 6, 6, 6, 9, 9]);
  // One turn at a time (the default): the summary changes every decision past the window.
  const one = compileHistory(h, { ...o, summaryBlock: 1 });
  assert.equal(one.dropped.summarisedTurns, 8);
});

test('a reply without a call: its rejection leads the next observation (no unpaired tool message)', () => {
  const h = episode(1);
  const bad: Turn = {
    observation: [{ type: 'text', text: 'observation 2' }],
    reply: { role: 'assistant', text: 'I will move now {' },
    result: { tool: null, status: 'rejected', text: 'Rejected: the tool call is not valid JSON.' },
  };
  const p = compileHistory(
    { ...h, turns: [h.turns[0]!, bad, turn(3, true)] },
    { tools, keepImages: 1, windowTurns: 5 },
  );
  assert.deepEqual(
    p.messages.map((m) => m.role),
    ['system', 'user', 'assistant', 'tool', 'user', 'assistant', 'user'],
  );
  const last = p.messages.at(-1)!;
  assert.match(textOf([last]), /^Rejected: the tool call is not valid JSON\.\|observation 3\|<top, turn 3>$/);
  assert.equal(
    summarise([bad]).split('\n')[0],
    'Host summary of turns 1–1 (their images and full text are no longer shown): 1 decision; tools called: no valid call ×1; outcomes: rejected ×1.',
  );
});

test('a context bound summarises the fewest more turns, oldest first, and reports them', () => {
  const h = episode(20);
  const o = { tools, keepImages: 2, windowTurns: 21, imageTokens: 500 };
  const free = compileHistory(h, o);
  assert.equal(free.dropped.summarisedTurns, 0);
  for (const contextTokens of [free.tokens + 1024, free.tokens + 1023, free.tokens + 600, free.tokens + 200]) {
    const p = compileHistory(h, { ...o, contextTokens, reserveTokens: 1024 });
    assert.ok(p.tokens <= contextTokens - 1024, `${p.tokens} tokens in a ${contextTokens}-token context`);
    assert.equal(p.dropped.trimmedForContext, p.dropped.summarisedTurns);
    // The fewest: one turn fewer in the summary would not fit.
    const s = p.dropped.summarisedTurns;
    if (s > 0) {
      const more = compileHistory(h, { ...o, windowTurns: 21 - s + 1 });
      assert.ok(more.tokens > contextTokens - 1024, `summarising ${s - 1} turns would have fit`);
    }
    assert.deepEqual(imagesOf(p.messages).slice(0, 2), ['goal', 'demo keyframe 1']);
    assert.deepEqual(p.counts, { turns: 21, decisions: 20 });
  }
  assert.equal(
    compileHistory(h, { ...o, contextTokens: free.tokens + 1024, reserveTokens: 1024 }).dropped.summarisedTurns,
    0,
  );
});

test('with an exact counter the bound is that counter; when only the current turn is left its images go next', () => {
  // A counter where each image costs 100 and text nothing.
  const count = (ms: readonly PolicyMessage[]) => 100 * imagesOf([...ms]).length;
  const h = episode(3);
  const p = compileHistory(h, { tools, keepImages: 5, windowTurns: 5, count, contextTokens: 350, reserveTokens: 0 });
  // Goal + keyframe (200) + one online image fits; the last turn keeps its frame.
  assert.deepEqual(imagesOf(p.messages), ['goal', 'demo keyframe 1', 'top, turn 4']);
  assert.equal(p.tokens, 300);
  const q = compileHistory(h, { tools, keepImages: 5, windowTurns: 5, count, contextTokens: 250, reserveTokens: 0 });
  assert.deepEqual(imagesOf(q.messages), ['goal', 'demo keyframe 1']);
  assert.equal(q.dropped.summarisedTurns, 3);
  assert.deepEqual(q.dropped.images, ['top, turn 1', 'top, turn 2', 'top, turn 3', 'top, turn 4']);
  assert.throws(
    () => compileHistory(h, { tools, keepImages: 5, windowTurns: 5, count, contextTokens: 150, reserveTokens: 0 }),
    (e: unknown) =>
      e instanceof HistoryBudgetError &&
      e.tokens === 200 &&
      e.budget === 150 &&
      /needs 200 tokens with only the references and the current observation; the context leaves 150/.test(e.message),
  );
});
