import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Systeminformation } from 'systeminformation';
import { homedir } from 'node:os';
import { describeDisks, mountOf } from '../../../daemon/doctor/disks.js';
import { formatDoctorReport } from '../../../daemon/doctor/format.js';
import { recommendProfile } from '../../../daemon/doctor/profile.js';
import { engineSchema } from '../../../daemon/engine/config.js';
import { parseOrThrow } from '../../../robot/common/validation/builders.js';
import { gatherDoctorReport, type DoctorProbe } from '../../../daemon/doctor/report.js';

const GiB = 1024 ** 3;
type Fs = Systeminformation.FsSizeData;
type Disk = Systeminformation.DiskLayoutData;
type Block = Systeminformation.BlockDevicesData;

const fs = (mount: string, dev: string, size: number, available: number): Fs => ({
  fs: dev,
  type: 'ext4',
  size,
  used: size - available,
  available,
  use: 0,
  mount,
  rw: true,
});
const disk = (device: string, type: string, interfaceType: string): Disk =>
  ({ device, type, name: device, vendor: '', size: 512 * GiB, interfaceType }) as Disk;

test('recommended profile: the auto-size for the budget and the model, with its reasons', () => {
  const at = (g: number) => recommendProfile({ bytes: g * GiB, source: 'total memory' });
  assert.deepEqual(
    [4, 8, 16, 24, 64].map((g) => at(g).name),
    ['streaming', 'streaming', 'streaming', 'resident', 'resident'],
    'the reference 17.2 GB model streams below ~20 GiB',
  );
  assert.deepEqual(
    [at(4).profile.decode_path, at(4).profile.io_mode, at(4).profile.prefill_path, at(4).profile.slots],
    ['staged', 'direct', 'whole-layer', 16],
  );
  assert.deepEqual([at(8).profile.decode_path, at(8).profile.io_mode], ['staged', 'direct']);
  assert.deepEqual([at(16).profile.decode_path, at(16).profile.io_mode], ['exact', 'page-cache']);
  assert.equal(at(4).profile.prerouter, 'on', 'streaming: the prerouter is recommended (it changes outputs)');
  assert.equal(at(64).profile.prerouter, 'off');
  assert.ok(at(8).profile.slots > at(4).profile.slots, 'more budget, more slots');
  assert.match(at(4).reasons.join('\n'), /experts stream from disk/);
  // A small model is resident under the same 4 GiB.
  const small = { fileBytes: GiB, expertBytes: 1 << 20, moeLayers: 8, experts: 64, topK: 4 };
  assert.equal(recommendProfile({ bytes: 4 * GiB, source: 'cgroup v1 /x' }, 'small', small).name, 'resident');
  // Every profile's engine keys are valid config.
  for (const g of [4, 8, 16, 24, 64]) {
    const { top_k: _k, ...engine } = at(g).profile;
    const parsed = parseOrThrow(engineSchema, engine) as Record<string, unknown>;
    for (const [k, v] of Object.entries(engine)) assert.equal(parsed[k], v, `${g} GiB: engine.${k}`);
  }
});

test('mountOf picks the longest mount prefix, not a sibling with a common prefix', () => {
  const mounts = ['/', '/data', '/data2', '/home'];
  assert.equal(mountOf('/data/models', mounts), '/data');
  assert.equal(mountOf('/data2', mounts), '/data2');
  assert.equal(mountOf('/datax/y', mounts), '/');
  assert.equal(mountOf('/x', ['/home']), null);
});

test('NVMe detection on Linux from device names and lsblk transport', () => {
  const r = describeDisks(
    [
      fs('/', '/dev/nvme0n1p2', 500 * GiB, 200 * GiB),
      fs('/mnt/usb', '/dev/sda1', 100 * GiB, 50 * GiB),
      fs('/srv', '/dev/mapper/vg-srv', 100 * GiB, 10 * GiB),
      fs('/boot/efi', '/dev/mmcblk0p1', 0, 0),
    ],
    [disk('/dev/nvme0n1', 'NVMe', 'PCIe'), disk('/dev/sda', 'HD', 'USB')],
    [{ name: 'dm-0', mount: '/srv', protocol: 'nvme' } as Block],
    '/srv/brainstem',
    'linux',
  );
  assert.deepEqual(
    r.filesystems.map((f) => [f.mount, f.nvme]),
    [
      ['/', true],
      ['/mnt/usb', false],
      ['/srv', true],
    ],
    'zero-size filesystems are dropped',
  );
  assert.deepEqual(
    r.physical.map((p) => p.nvme),
    [true, false],
  );
  assert.deepEqual(r.data_dir, { path: '/srv/brainstem', mount: '/srv', free_bytes: 10 * GiB, nvme: true });
});

test('macOS APFS volumes count as NVMe when every physical disk is', () => {
  const volumes = [fs('/', '/dev/disk3s1s1', 500 * GiB, 300 * GiB)];
  assert.equal(
    describeDisks(volumes, [disk('/dev/disk0', 'NVMe', 'PCIe')], [], '/Users/a/.brainstem', 'darwin').data_dir.nvme,
    true,
  );
  assert.equal(
    describeDisks(volumes, [disk('/dev/disk0', 'NVMe', 'PCIe'), disk('/dev/disk4', 'HD', 'USB')], [], '/x', 'darwin')
      .data_dir.nvme,
    null,
  );
});

function probe(over: Partial<DoctorProbe>): DoctorProbe {
  return {
    platform: 'linux',
    arch: 'x64',
    cpu: async () =>
      ({
        manufacturer: 'AMD',
        brand: 'EPYC',
        vendor: 'AMD',
        cores: 8,
        physicalCores: 8,
        performanceCores: 8,
        efficiencyCores: 0,
      }) as Systeminformation.CpuData,
    mem: async () => ({ total: 32 * GiB, available: 20 * GiB }) as Systeminformation.MemData,
    fsSize: async () => [fs('/', '/dev/nvme0n1p1', 1000 * GiB, 600 * GiB)],
    diskLayout: async () => [],
    blockDevices: async () => [],
    readText: () => undefined,
    native: () => ({
      addon: {
        info: () => ({
          version: '0.1.0',
          cpuFeatures: 'avx2',
          backends: [{ name: 'cpu', compiled: true, usable: true, detail: '' }],
          kernelSets: [],
          architectures: [],
        }),
      },
    }),
    ...over,
  };
}

test('Apple Silicon: brand, performance/efficiency cores, unified memory', async () => {
  const r = await gatherDoctorReport(
    '/Users/a/.brainstem',
    probe({
      platform: 'darwin',
      arch: 'arm64',
      cpu: async () =>
        ({
          manufacturer: 'Apple',
          brand: 'M2 Pro',
          vendor: 'Apple',
          cores: 12,
          physicalCores: 12,
          performanceCores: 8,
          efficiencyCores: 4,
        }) as Systeminformation.CpuData,
      mem: async () => ({ total: 16 * GiB, available: 9 * GiB }) as Systeminformation.MemData,
    }),
  );
  assert.deepEqual(r.cpu, {
    vendor: 'Apple',
    model: 'Apple M2 Pro',
    cores: 12,
    apple_silicon: true,
    performance_cores: 8,
    efficiency_cores: 4,
  });
  assert.deepEqual(r.memory, { total_bytes: 16 * GiB, available_bytes: 9 * GiB, unified: true });
  assert.equal(r.recommended_profile.model, 'reference 30B-A3B int4');
  const text = formatDoctorReport(r);
  assert.match(text, /CPU {8}Apple M2 Pro, 12 cores \(8 performance \+ 4 efficiency\)/);
  assert.match(text, /unified: yes/);
});

test('Jetson: model and L4T from the files, unified memory; a missing addon is reported, not thrown', async () => {
  const files: Record<string, string> = {
    '/proc/device-tree/model': 'NVIDIA Jetson Orin Nano Developer Kit\0',
    '/etc/nv_tegra_release': '# R36 (release), REVISION: 3.0, GCID: 1',
  };
  const r = await gatherDoctorReport(
    '/home/u/.brainstem',
    probe({
      arch: 'arm64',
      readText: (p) => files[p],
      native: () => ({ error: 'native addon not found at /x; build it with `npm run build:native`' }),
    }),
  );
  assert.equal(r.cpu.model, 'NVIDIA Jetson Orin Nano Developer Kit');
  assert.equal(r.cpu.jetson?.l4t, '36.3.0');
  assert.equal(r.memory.unified, true);
  assert.deepEqual(r.native, {
    built: false,
    backends: [],
    error: 'native addon not found at /x; build it with `npm run build:native`',
  });
  const text = formatDoctorReport(r);
  assert.match(text, /Jetson {5}NVIDIA Jetson Orin Nano Developer Kit, L4T 36\.3\.0 \(JetPack 6\), sm_87/);
  assert.match(text, /Native {5}not available: .*npm run build:native/);
});

test('a plain x86 server: no P/E split, not unified, backends listed', async () => {
  const r = await gatherDoctorReport('/home/u/.brainstem', probe({}));
  assert.equal(r.cpu.performance_cores, undefined);
  assert.equal(r.memory.unified, false);
  assert.equal(r.disks.data_dir.nvme, true);
  assert.match(formatDoctorReport(r), /cpu {4}compiled: yes, usable: yes/);
});

test('model paths are read as start reads them: ~ expanded, relative ones from the working directory', async () => {
  const models = { rel: { path: 'no-such-model' }, home: { path: '~/no-such-brainstem-model' } };
  const r = await gatherDoctorReport('/home/u/.brainstem', probe({}), models, '/srv/work');
  const errors = Object.fromEntries(r.model_profiles.map((p) => [p.model, 'error' in p ? p.error : '']));
  assert.match(errors.rel!, /\/srv\/work\/no-such-model\/config\.json/);
  assert.match(errors.home!, new RegExp(`${homedir()}/no-such-brainstem-model/config\\.json`));
  assert.doesNotMatch(errors.home!, /~/);
  assert.deepEqual(
    r.vision.models.map((m) => m.path),
    ['/srv/work/no-such-model', `${homedir()}/no-such-brainstem-model`],
  );
});
