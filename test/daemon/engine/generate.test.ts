import { test } from 'node:test';
import assert from 'node:assert/strict';
import { type GenerateOptions, type GenerationResult, generate } from '../../../daemon/engine/generate.js';
import { PrefixSession } from '../../../daemon/engine/prefix-cache.js';
import { DEFAULT_SAMPLING, Sampler } from '../../../daemon/engine/sampler.js';
import { TextTokenizer } from '../../../daemon/engine/tokenizer.js';
import { RequestError } from '../../../daemon/engine/request-error.js';
import { FIXTURE, FakeClock, GreedyHashSource, HashLogitsSource, ScriptedLogitsSource } from './fake-sources.js';
import { EngineError } from '../../../daemon/engine/native-model.js';

const tok = await TextTokenizer.fromDir(FIXTURE);
const V = tok.vocabSize;
const STOPS = new Set([292]);

function options(prompt: number[], over: Partial<GenerateOptions> = {}): GenerateOptions {
  return {
    prompt,
    maxTokens: 24,
    sampler: new Sampler({ ...DEFAULT_SAMPLING, seed: 5, temperature: 0.9 }, STOPS),
    detokenizer: tok.streamDecoder(),
    stopTokens: STOPS,
    vocabSize: V,
    ...over,
  };
}

async function collect(
  gen: AsyncGenerator<string, GenerationResult>,
  onDelta?: (n: number) => void,
): Promise<{ deltas: string[]; result: GenerationResult }> {
  const deltas: string[] = [];
  for (;;) {
    const step = await gen.next();
    if (step.done) return { deltas, result: step.value };
    deltas.push(step.value);
    onDelta?.(deltas.length);
  }
}

async function cold(prompt: number[], over: Partial<GenerateOptions> = {}): Promise<GenerationResult> {
  return (await collect(generate(new PrefixSession(new HashLogitsSource(V)), options(prompt, over)))).result;
}

const P1 = tok.encode('<|im_start|>user\nhello the world<|im_end|>\n<|im_start|>assistant\n');

test('second turn prefills only the new tokens and matches a cold run', async () => {
  const source = new HashLogitsSource(V);
  const session = new PrefixSession(source);
  const first = (await collect(generate(session, options(P1)))).result;
  assert.equal(session.stats.prefilledTokens, P1.length);
  assert.equal(first.usage.cachedTokens, 0);
  // The last sampled token was never decoded, so the cache holds P1 + all but one output token.
  assert.equal(source.length, P1.length + first.tokens.length - 1);
  const extra = tok.encode('<|im_end|>\n<|im_start|>user\nmore<|im_end|>\n<|im_start|>assistant\n');
  const P2 = [...P1, ...first.tokens, ...extra];
  const before = source.calls.prefilledTokens;
  const second = (await collect(generate(session, options(P2)))).result;
  assert.equal(
    source.calls.prefilledTokens - before,
    1 + extra.length,
    'the undecoded last output token and the new turn',
  );
  assert.equal(second.usage.cachedTokens, P1.length + first.tokens.length - 1);
  assert.equal(second.timings.prefillTokens, 1 + extra.length);
  const reference = await cold(P2);
  assert.deepEqual(second.tokens, reference.tokens);
  assert.equal(second.text, reference.text);
  assert.equal(session.stats.reusedTokens, P1.length + first.tokens.length - 1);
});

test('a diverging prompt truncates to the common prefix; an identical prompt prefills one token', async () => {
  const source = new HashLogitsSource(V);
  const session = new PrefixSession(source);
  await collect(generate(session, options(P1)));
  const diverged = [...P1.slice(0, 10), ...tok.encode('other words')];
  const before = source.calls.prefilledTokens;
  const r = (await collect(generate(session, options(diverged)))).result;
  assert.equal(source.calls.prefilledTokens - before, diverged.length - 10);
  assert.deepEqual(r.tokens, (await cold(diverged)).tokens);
  const again = source.calls.prefilledTokens;
  const same = (await collect(generate(session, options(diverged)))).result;
  assert.equal(source.calls.prefilledTokens - again, 1, 'logits are not cached, so the last prompt token runs again');
  assert.deepEqual(same.tokens, r.tokens);
});

test('cancellation mid-stream stops decoding at once and leaves a consistent, reusable cache', async () => {
  const source = new HashLogitsSource(V);
  const session = new PrefixSession(source);
  const ac = new AbortController();
  const { deltas, result } = await collect(
    generate(session, options(P1, { maxTokens: 200, signal: ac.signal })),
    (n) => {
      if (n === 3) ac.abort();
    },
  );
  assert.equal(result.finishReason, 'cancelled');
  assert.ok(deltas.length <= 4, `${deltas.length} deltas after cancelling at 3`);
  assert.ok(result.tokens.length < 200);
  assert.equal(source.calls.decode, result.tokens.length - 1, 'no decode after the abort');
  assert.equal(source.length, session.tokens.length);
  const follow = [...P1, ...result.tokens, ...tok.encode('go on')];
  const r = (await collect(generate(session, options(follow)))).result;
  assert.deepEqual(r.tokens, (await cold(follow)).tokens);
});

test('an already aborted signal prefills nothing; chunked prefill stops between chunks', async () => {
  const source = new HashLogitsSource(V);
  const session = new PrefixSession(source, 4);
  const r = (await collect(generate(session, options(P1, { signal: AbortSignal.abort() })))).result;
  assert.equal(r.finishReason, 'cancelled');
  assert.equal(source.calls.prefill, 0);
  const ac = new AbortController();
  const original = source.prefill.bind(source);
  source.prefill = async (t) => {
    const out = await original(t);
    ac.abort();
    return out;
  };
  const c = (await collect(generate(session, options(P1, { signal: ac.signal })))).result;
  assert.equal(c.finishReason, 'cancelled');
  assert.deepEqual(c.tokens, []);
  assert.deepEqual(session.tokens, P1.slice(0, 4), 'the first chunk stays cached');
});

test('stop token ends the output without text; max tokens ends it with "length"', async () => {
  const script = [...tok.encode('hello'), 292, 78];
  const session = new PrefixSession(new ScriptedLogitsSource(V, script));
  const r = (
    await collect(
      generate(session, options(P1, { sampler: new Sampler({ ...DEFAULT_SAMPLING, seed: 1, temperature: 0 }) })),
    )
  ).result;
  assert.deepEqual(r, { ...r, text: 'hello', finishReason: 'stop', tokens: script.slice(0, 2) });
  assert.equal(r.usage.completionTokens, 2);
  const l = await cold(P1, { maxTokens: 5 });
  assert.equal(l.finishReason, 'length');
  assert.equal(l.tokens.length, 5);
});

test('stop strings across token boundaries; UTF-8 split across tokens streams whole characters', async () => {
  const greedy = (): Sampler => new Sampler({ ...DEFAULT_SAMPLING, seed: 1, temperature: 0 });
  const script = tok.encode('hello the world');
  const s = (
    await collect(
      generate(
        new PrefixSession(new ScriptedLogitsSource(V, script)),
        options(P1, { sampler: greedy(), stopStrings: ['e w'] }),
      ),
    )
  ).result;
  assert.equal(s.text, 'hello th');
  assert.equal(s.stopString, 'e w');
  const emoji = tok.encode('a😀b');
  const { deltas, result } = await collect(
    generate(new PrefixSession(new ScriptedLogitsSource(V, [...emoji, 292])), options(P1, { sampler: greedy() })),
  );
  assert.deepEqual(deltas, ['a', '😀', 'b']);
  assert.equal(result.text, 'a😀b');
});

test('timings from an injected clock: prefill and decode rates, time to first token', async () => {
  const clock = new FakeClock();
  // 1 ms per prefilled token, 10 ms per decode.
  const source = new HashLogitsSource(V, 4, clock);
  const session = new PrefixSession(source);
  const n = P1.length;
  const r = (await collect(generate(session, options(P1, { maxTokens: 5, clock: clock.read })))).result;
  const decodes = r.tokens.length - 1;
  assert.ok(decodes >= 1, 'the seeded run samples more than one token');
  assert.deepEqual(r.timings, {
    prefillTokens: n,
    prefillMs: n,
    prefillTokensPerSecond: 1000,
    decodeTokens: decodes,
    decodeMs: 10 * decodes,
    decodeTokensPerSecond: 100,
    timeToFirstTokenMs: n,
    totalMs: n + 10 * decodes,
  });
});

test('max_tokens below what the constraint needs is a request error', async () => {
  const constraint = { minTokens: 10, mask: (): void => {}, accept: (): void => {} };
  await assert.rejects(
    collect(generate(new PrefixSession(new HashLogitsSource(V)), options(P1, { maxTokens: 5, constraint }))),
    (e: unknown) => e instanceof RequestError && /needs at least 10 tokens, got 5/.test(e.message),
  );
});

test('greedy requests decode through decodeGreedy (no logits handed over) with the tokens of the logits path', async () => {
  const greedy = (over: Partial<typeof DEFAULT_SAMPLING> = {}): Sampler =>
    new Sampler({ ...DEFAULT_SAMPLING, seed: 1, temperature: 0, ...over }, STOPS);
  // A vocabulary limit below the source's: padded ids are never chosen on either path.
  const run = async (source: HashLogitsSource, over: Partial<GenerateOptions> = {}) => {
    const session = new PrefixSession(source);
    const r = (await collect(generate(session, options(P1, { maxTokens: 12, vocabSize: V - 5, ...over })))).result;
    return { r, stats: session.stats };
  };
  const logitsPath = await run(new HashLogitsSource(V), { sampler: greedy() });
  const source = new GreedyHashSource(V);
  const fast = await run(source, { sampler: greedy() });
  assert.deepEqual(fast.r.tokens, logitsPath.r.tokens);
  assert.equal(fast.r.text, logitsPath.r.text);
  assert.equal(source.calls.decode, 0, 'no decode step copied logits');
  assert.equal(source.greedyCalls, fast.r.tokens.length - 1);
  assert.equal(fast.stats.greedyDecodes, fast.r.tokens.length - 1);
  assert.equal(fast.stats.decodedTokens, fast.r.tokens.length - 1);
  assert.equal(fast.r.timings.decodeTokens, fast.r.tokens.length - 1);
  // top_k 1 at any temperature is greedy too.
  const topK1 = await run(new GreedyHashSource(V), { sampler: greedy({ temperature: 0.7, topK: 1 }) });
  assert.deepEqual(topK1.r.tokens, logitsPath.r.tokens);
  assert.equal(topK1.stats.greedyDecodes, topK1.r.tokens.length - 1);
});

test('sampling, biases, penalties and constraints keep the logits path', async () => {
  const base = { ...DEFAULT_SAMPLING, seed: 1, temperature: 0 };
  const constraint = { minTokens: 1, mask: (): void => {}, accept: (): void => {} };
  const cases: [string, Partial<GenerateOptions>][] = [
    ['temperature', { sampler: new Sampler({ ...base, temperature: 0.8 }) }],
    ['logit_bias', { sampler: new Sampler({ ...base, logitBias: new Map([[7, 3]]) }) }],
    ['repetition_penalty', { sampler: new Sampler({ ...base, repetitionPenalty: 1.1 }) }],
    ['frequency_penalty', { sampler: new Sampler({ ...base, frequencyPenalty: 0.5 }) }],
    ['presence_penalty', { sampler: new Sampler({ ...base, presencePenalty: 0.5 }) }],
    ['constraint', { sampler: new Sampler(base), constraint }],
  ];
  for (const [name, over] of cases) {
    const source = new GreedyHashSource(V);
    const session = new PrefixSession(source);
    const r = (await collect(generate(session, options(P1, { maxTokens: 6, ...over })))).result;
    assert.equal(source.greedyCalls, 0, name);
    assert.equal(source.calls.decode, r.tokens.length - 1, name);
    assert.equal(session.stats.greedyDecodes, 0, name);
  }
});

test('a greedy decode step with no finite logit is an engine error, as from the sampler', async () => {
  const source = new GreedyHashSource(V);
  source.decodeGreedy = async () => -1;
  const sampler = new Sampler({ ...DEFAULT_SAMPLING, seed: 1, temperature: 0 });
  await assert.rejects(
    collect(generate(new PrefixSession(source), options(P1, { sampler }))),
    (e: unknown) => e instanceof EngineError && /no token has a finite logit/.test(e.message),
  );
});
