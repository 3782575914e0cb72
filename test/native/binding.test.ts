import { test } from 'node:test';
import assert from 'node:assert/strict';
import { acceleratorNote, loadNative } from '../../daemon/native/binding.js';

test('native addon loads and reports the CPU backend', () => {
  const info = loadNative().info();
  assert.equal(typeof info.version, 'string');
  const cpu = info.backends.find((b) => b.name === 'cpu');
  assert.ok(cpu, 'cpu backend listed');
  assert.equal(cpu.compiled, true);
  assert.equal(cpu.usable, true);
});

test('native info lists the reference kernel set and the supported architectures', () => {
  const info = loadNative().info();
  const ref = info.kernelSets.find((k) => k.name === 'cpu-ref');
  assert.ok(ref?.usable, JSON.stringify(info.kernelSets));
  for (const arch of ['glm4_moe', 'qwen3_moe', 'qwen3_next', 'qwen3_5_moe', 'qwen3_vl_moe'])
    assert.ok(info.architectures.includes(arch), `${arch} in ${info.architectures}`);
});

test('GPU devices are always listed: compiled or not, usable only with a device', () => {
  const info = loadNative().info();
  for (const name of ['cuda', 'metal']) {
    const dev = info.backends.find((b) => b.name === name);
    assert.ok(dev, `${name} listed in ${JSON.stringify(info.backends)}`);
    const set = info.kernelSets.find((k) => k.name === name);
    assert.equal(dev.compiled, set !== undefined, `${name}: compiled iff its kernel set is in the build`);
    if (!dev.compiled) assert.equal(dev.usable, false);
    if (set) assert.equal(dev.usable, set.usable);
  }
});

test('probeDevices resolves, and info() after it reports the same devices', async () => {
  const addon = loadNative();
  const before = addon.info().backends.map((b) => [b.name, b.compiled, b.usable]);
  assert.equal(await addon.probeDevices(), undefined);
  assert.deepEqual(
    addon.info().backends.map((b) => [b.name, b.compiled, b.usable]),
    before,
  );
});

test('argmax picks the first maximum of a Float32Array and rejects anything else', () => {
  const { argmax } = loadNative();
  const x = new Float32Array(151936).fill(-1);
  x[70001] = 2;
  x[90000] = 2;
  x[5] = Number.NaN;
  assert.equal(argmax(x), 70001);
  assert.equal(argmax(x.subarray(70002)), 90000 - 70002, 'a view reads from its own offset');
  assert.equal(argmax(new Float32Array([-Infinity, Number.NaN])), -1);
  for (const bad of [[1, 2], new Float64Array(3), null]) {
    assert.throws(() => argmax(bad as never), /argmax: logits must be a Float32Array/);
  }
});

test('acceleratorNote says why backend auto passed over a compiled GPU kernel set, and nothing otherwise', () => {
  const set = (name: string, auto: boolean, detail = '') => ({ name, usable: auto, auto, detail });
  const info = (...kernelSets: ReturnType<typeof set>[]) => ({ ...loadNative().info(), kernelSets });
  assert.equal(acceleratorNote(info(set('cpu-avx2', true))), undefined);
  assert.equal(acceleratorNote(info(set('cpu-avx2', true), set('cuda', true))), undefined);
  assert.equal(
    acceleratorNote(info(set('cpu-avx2', true), set('cuda', false, 'no usable CUDA driver or device'))),
    'cuda not chosen by backend auto: no usable CUDA driver or device',
  );
  // This build: a note exactly when a compiled cuda/metal set is not auto's pick.
  const real = loadNative().info();
  const passed = real.kernelSets.filter((k) => (k.name === 'cuda' || k.name === 'metal') && !k.auto);
  assert.equal(acceleratorNote(real) === undefined, passed.length === 0);
});
