import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ToolValidator } from '../../../robot/tools/validate.js';
import { BASES, NO_ARGS, generate, render } from './corpus.js';

const validators = new Map<string, ToolValidator>();
const validatorFor = (arms: string[]) => {
  const key = arms.join(',');
  if (!validators.has(key)) validators.set(key, new ToolValidator(arms));
  return validators.get(key)!;
};

const show = (v: unknown) =>
  typeof v === 'string'
    ? JSON.stringify(v)
    : JSON.stringify(v, (_k, x) => (typeof x === 'number' && !Number.isFinite(x) ? String(x) : x));

test('the unmutated bases are accepted in every reply form', () => {
  for (const b of [...BASES, ...NO_ARGS]) {
    for (const form of ['hermes', 'bare', 'fenced', 'openai', 'openai-object', 'object'] as const) {
      const r = validatorFor(b.arms).validate(render(b.name, b.args, form));
      assert.ok(r.ok, `${b.name} as ${form}: ${r.ok ? '' : r.message}`);
    }
  }
});

for (const seed of [1, 2]) {
  test(`seeded corpus (seed ${seed}): 1,100 malformed calls, each rejected with a message naming the problem`, () => {
    const cases = generate(seed, 1100);
    const perKind = new Map<string, number>();
    cases.forEach((c, i) => {
      const r = validatorFor(c.arms).validate(c.input);
      const where = `seed ${seed} case ${i} (${c.kind}): ${show(c.input)}`;
      assert.equal(r.ok, false, `accepted ${where}`);
      if (r.ok) return;
      assert.match(r.message, c.expect, `${where}\nmessage: ${r.message}`);
      assert.match(r.message, /^Rejected: .+\. Nothing was executed; reply with one corrected tool call\.$/s, where);
      perKind.set(c.kind, (perKind.get(c.kind) ?? 0) + 1);
    });
    assert.ok(perKind.size >= 20, `only ${perKind.size} mutation kinds`);
    for (const [kind, n] of perKind) assert.ok(n >= 40, `kind ${kind}: only ${n} cases`);
  });
}
