// The addon inside a worker thread that is terminated while native work runs: the completion then
// finds no JS to resolve into, and must end quietly (it aborted the whole process: exit 134). And a
// prefill longer than any context is refused before its ids are copied.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Worker } from 'node:worker_threads';
import { addonPath, loadNative } from '../../daemon/native/binding.js';
import { synthTiny } from '../helpers/serving.js';

const WORKER = `
const { workerData, parentPort } = require('node:worker_threads');
const native = require(workerData.addon);
(async () => {
  const m = await native.loadModel(workerData.dir, { threads: 1, contextLength: 4096 });
  const s = await native.createSession(m.handle);
  const tokens = new Int32Array(2000).fill(7);
  for (let i = 0; i < 3; i++) void native.prefill(s, tokens).catch(() => undefined);
  parentPort.postMessage('running');
})();
`;

test('terminating a worker thread mid-prefill leaves the process running', async (t) => {
  const model = await synthTiny(3);
  t.after(() => model.remove());
  for (let round = 0; round < 3; round++) {
    const w = new Worker(WORKER, { eval: true, workerData: { addon: addonPath, dir: model.path } });
    await new Promise<void>((resolve, reject) => {
      w.once('message', () => resolve());
      w.once('error', reject);
    });
    assert.equal(await w.terminate(), 1, `round ${round}: terminated`);
  }
  // Still here: a process aborted by the teardown would not reach this line (the runner reports it failed).
  assert.ok(process.uptime() > 0);
});

test('a prefill of more ids than any context holds is refused before they are copied', async (t) => {
  const model = await synthTiny(4);
  t.after(() => model.remove());
  const native = loadNative();
  const m = await native.loadModel(model.path, { threads: 1, contextLength: 64 });
  t.after(() => native.disposeModel(m.handle));
  const s = await native.createSession(m.handle);
  await assert.rejects(
    native.prefill(s, new Int32Array((1 << 24) + 1)),
    /prefill: tokens holds 16777217 ids, more than any context \(16777216\)/,
  );
  await assert.rejects(native.prefill(s, new Int32Array(65).fill(7)), /context/);
});
