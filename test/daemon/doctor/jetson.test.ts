import { test } from 'node:test';
import assert from 'node:assert/strict';
import { detectJetson, parseTegraRelease } from '../../../daemon/doctor/jetson.js';

test('L4T release lines parse into major.revision', () => {
  assert.deepEqual(
    parseTegraRelease(
      '# R36 (release), REVISION: 3.0, GCID: 36923193, BOARD: generic, EABI: aarch64, DATE: Fri Jul 19 23:24:25 UTC 2024\n',
    ),
    { l4t: '36.3.0', major: 36 },
  );
  assert.deepEqual(parseTegraRelease('# R35 (release), REVISION: 4.1, GCID: 33958178, BOARD: t186ref, EABI: aarch64'), {
    l4t: '35.4.1',
    major: 35,
  });
  assert.deepEqual(parseTegraRelease('# R32 (release), REVISION: 7.1'), { l4t: '32.7.1', major: 32 });
  assert.equal(parseTegraRelease('garbage'), undefined);
});

test('a Jetson is recognised from the device tree and the release file', () => {
  const files: Record<string, string> = {
    '/proc/device-tree/model': 'NVIDIA Jetson AGX Orin Developer Kit\0',
    '/etc/nv_tegra_release': '# R36 (release), REVISION: 4.0, GCID: 1, BOARD: generic, EABI: aarch64\n',
  };
  assert.deepEqual(
    detectJetson((p) => files[p]),
    { model: 'NVIDIA Jetson AGX Orin Developer Kit', l4t: '36.4.0', jetpack_major: 6, cuda_arch: 'sm_87' },
  );
  assert.deepEqual(
    detectJetson((p) => (p === '/proc/device-tree/model' ? 'NVIDIA Jetson Xavier NX Developer Kit\0' : undefined)),
    { model: 'NVIDIA Jetson Xavier NX Developer Kit', cuda_arch: 'sm_72' },
  );
});

test('other boards are not Jetsons', () => {
  assert.equal(
    detectJetson(() => undefined),
    undefined,
  );
  assert.equal(
    detectJetson((p) => (p === '/proc/device-tree/model' ? 'Raspberry Pi 5 Model B Rev 1.0\0' : undefined)),
    undefined,
  );
});
