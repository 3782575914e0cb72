import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadNative } from '../../daemon/native/binding.js';

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
  assert.deepEqual([...info.architectures].sort(), ['glm4_moe', 'qwen3_moe']);
});
