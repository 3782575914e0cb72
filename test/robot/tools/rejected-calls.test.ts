// The malformed-call corpus through the executor connected to a live simulated controller:
// every call is rejected and nothing at all is sent to the controller.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { generate } from './corpus.js';
import { Loopback } from './loopback.js';

test('1,100 malformed calls (seed 3) against single- and dual-arm robots: all rejected, no command published', async () => {
  const single = new Loopback('yam');
  const dual = new Loopback('dual-yam');
  await single.run(0.3);
  await dual.run(0.3);
  const cases = generate(3, 1100);
  for (const [i, c] of cases.entries()) {
    const lb = c.arms.length === 1 ? single : dual;
    const o = await lb.exec.execute(c.input);
    assert.equal(o.status, 'rejected', `seed 3 case ${i} (${c.kind}) was ${o.status}: ${o.message}`);
    assert.match(o.message, c.expect, `seed 3 case ${i} (${c.kind})`);
  }
  await single.run(0.5);
  await dual.run(0.5);
  assert.deepEqual([single.sent.length, dual.sent.length], [0, 0]);
  assert.ok(single.states.length > 50 && dual.states.length > 50, 'the controllers were live throughout');
});
