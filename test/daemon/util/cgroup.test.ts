// Memory cgroups for benchmarks: finding the memory hierarchy from /proc texts (v1, v2, none),
// size parsing, and — where this machine allows it — a live limit that the OOM killer enforces
// on a child that allocates past it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createMemoryCgroup, findMemoryHierarchy, parseSize } from '../../../daemon/util/cgroup.js';

const V1_MOUNTS = [
  '31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755',
  '32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu',
  '35 31 0:32 / /sys/fs/cgroup/memory rw,relatime shared:7 - cgroup cgroup rw,memory',
  '40 31 0:37 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw',
].join('\n');

test('the memory hierarchy comes from /proc/self/cgroup and mountinfo', () => {
  assert.deepEqual(findMemoryHierarchy('5:devices:/\n4:memory:/jobs/abc\n0::/\n', V1_MOUNTS), {
    version: 1,
    mountPoint: '/sys/fs/cgroup/memory',
    ownPath: '/jobs/abc',
  });
  // Pure v2 (no v1 memory controller): the unified hierarchy.
  assert.deepEqual(
    findMemoryHierarchy('0::/user.slice/x.scope\n', '50 1 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw,nsdelegate'),
    {
      version: 2,
      mountPoint: '/sys/fs/cgroup',
      ownPath: '/user.slice/x.scope',
    },
  );
  // A container whose cgroup mount is rooted at its own cgroup: paths are relative to that root.
  assert.deepEqual(
    findMemoryHierarchy(
      '4:memory:/docker/123\n',
      '35 31 0:32 /docker/123 /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory',
    ),
    {
      version: 1,
      mountPoint: '/sys/fs/cgroup/memory',
      ownPath: '/',
    },
  );
  assert.equal(
    findMemoryHierarchy('1:cpu:/\n', '32 31 0:29 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu'),
    undefined,
  );
});

test('sizes: binary K/M/G/T and KiB…, decimal KB/MB/GB/TB, plain bytes', () => {
  const cases: [string, number | undefined][] = [
    ['4GiB', 4 * 2 ** 30],
    ['4G', 4 * 2 ** 30],
    ['4g', 4 * 2 ** 30],
    ['512MiB', 512 * 2 ** 20],
    ['1.5GB', 1.5e9],
    ['1000000', 1e6],
    [' 2 TiB ', 2 * 2 ** 40],
    ['64KB', 64000],
    ['4 GB', 4e9],
    ['', undefined],
    ['four', undefined],
    ['4XB', undefined],
    ['-1G', undefined],
  ];
  for (const [text, want] of cases) assert.equal(parseSize(text), want, JSON.stringify(text));
});

test('a process past the cgroup limit is killed by the OOM killer (where cgroups are writable)', async (t) => {
  const limit = 64 * 2 ** 20;
  const { cgroup, reason } = createMemoryCgroup(limit, `brainstem-test-${process.pid}`);
  if (!cgroup) {
    t.skip(`no writable memory cgroup here: ${reason}`);
    return;
  }
  t.after(() => cgroup.remove());
  assert.equal(cgroup.limitBytes, limit);
  const run = (mib: number) =>
    new Promise<{ code: number | null; signal: string | null }>((resolve) => {
      // Touch every page of a `mib` MiB buffer.
      const code = `const b = Buffer.alloc(${mib} * 2 ** 20); for (let i = 0; i < b.length; i += 4096) b[i] = 1; console.log(b.length)`;
      const argv = cgroup.wrap([process.execPath, '-e', code]);
      const child = spawn(argv[0]!, argv.slice(1), { stdio: 'ignore' });
      child.once('close', (c, s) => resolve({ code: c, signal: s }));
    });
  assert.deepEqual(await run(8), { code: 0, signal: null }, 'a small allocation fits');
  const before = cgroup.oomKills() ?? 0;
  const big = await run(256);
  assert.equal(big.signal, 'SIGKILL', `256 MiB in a 64 MiB cgroup: ${JSON.stringify(big)}`);
  const after = cgroup.oomKills();
  if (after !== null) assert.ok(after > before, `oom_kill counter ${before} → ${after}`);
  const peak = cgroup.peakBytes();
  if (peak !== null) assert.ok(peak <= limit + 2 ** 20, `peak ${peak} stays at the limit ${limit}`);
});
