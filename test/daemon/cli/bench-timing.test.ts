import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runTimingBench } from '../../../daemon/bench/timing-bench.js';
import { parseTimingCases } from '../../../daemon/bench/timing-cases.js';

const root = fileURLToPath(new URL('../../../../', import.meta.url));
const main = join(root, 'dist', 'daemon', 'main.js');

/** A clock that advances 1 µs per read: every case then "takes" 1/repeat µs. */
function fakeClock(): () => bigint {
  let t = 0n;
  return () => (t += 1000n);
}

test('each format is detected by its header and checked against its durations', () => {
  // d = 10, V 2, A 1, J 1 → 8 s; d = 1 same limits → 4·cbrt(1/2) s (no limit reached); both as a 2-joint move → 8 s.
  const one = parseTimingCases('case,d,vmax,amax,jmax,duration\n0,10,2,1,1,8\n1,-1,2,1,1,3.1748021039363992\n');
  const multi = parseTimingCases('case,d0,d1,vmax0,vmax1,amax0,amax1,jmax0,jmax1,duration\n0,10,-1,2,2,1,1,1,1,8\n');
  // From (v0 = 1, a0 = 0) with A = 10, J = 1 the stop takes 2 s and ends at p = 1.
  const moving = parseTimingCases('case,d,vmax,amax,jmax,v0,a0,duration\n7,1,2,10,1,1,0,2\n');
  for (const [r, format, joints] of [
    [one, 'ruckig-1dof', 1],
    [multi, 'multi-joint', 2],
    [moving, 'moving-start', 1],
  ] as const) {
    assert.ok(r.ok, JSON.stringify(r));
    assert.equal(r.cases.format, format);
    assert.equal(r.cases.joints, joints);
    const res = runTimingBench(r.cases, 4, fakeClock());
    assert.ok(
      res.max_rel_duration_err !== null && res.max_rel_duration_err < 1e-12,
      `${format}: ${JSON.stringify(res)}`,
    );
    assert.equal(res.median_us, 0.25);
    assert.equal(res.rejected, 0);
  }
});

test('a wrong duration is reported as the worst case; rejected inputs are counted', () => {
  const r = parseTimingCases('case,d,vmax,amax,jmax,duration\na,10,2,1,1,8\nb,10,2,1,1,8.8\n');
  assert.ok(r.ok);
  const res = runTimingBench(r.cases, 1, fakeClock());
  assert.equal(res.worst_case, 'b');
  assert.ok(Math.abs(res.max_rel_duration_err! - 0.8 / 8.8) < 1e-12);
  const bad = parseTimingCases('case,d,vmax,amax,jmax,duration\na,10,2,1,1,8\nz,10,-2,1,1,8\n');
  assert.ok(bad.ok);
  const rb = runTimingBench(bad.cases, 1, fakeClock());
  assert.deepEqual([rb.rejected, rb.worst_case, rb.max_rel_duration_err], [1, 'z', null]);
});

test('malformed files name the line, column and value', () => {
  const a = parseTimingCases('case,d,vmax,amax,jmax,duration\n0,1,x,1,1,2\n');
  assert.ok(!a.ok && /line 2: column vmax must be a finite number, got "x"/.test(a.message), JSON.stringify(a));
  const b = parseTimingCases('case,d,vmax,jmax,duration\n0,1,1,1,2\n');
  assert.ok(!b.ok && /name amax/.test(b.message), JSON.stringify(b));
  const c = parseTimingCases('case,d,vmax,amax,jmax,duration\n');
  assert.ok(!c.ok && /at least one case/.test(c.message));
});

test('CLI end to end: JSON keys on the Ruckig oracle, readable errors and exit code 2 on bad input', () => {
  const out = spawnSync(
    process.execPath,
    [
      main,
      'bench',
      'timing',
      '--cases',
      join(root, 'test/fixtures/oracles/ruckig-1dof-rest2rest.csv'),
      '--json',
      '--repeat',
      '2',
    ],
    { encoding: 'utf8' },
  );
  assert.equal(out.status, 0, out.stderr);
  const res = JSON.parse(out.stdout);
  for (const key of ['cases', 'max_rel_duration_err', 'worst_case', 'median_us'])
    assert.ok(key in res, `missing ${key}`);
  assert.equal(res.cases, 10_000);
  assert.ok(res.max_rel_duration_err <= 1e-9);
  const dir = mkdtempSync(join(tmpdir(), 'bench-timing-'));
  try {
    const file = join(dir, 'bad.csv');
    writeFileSync(file, 'case,d,vmax,amax,jmax,duration\n0,1,1,1,nope,2\n');
    const bad = spawnSync(process.execPath, [main, 'bench', 'timing', '--cases', file, '--json'], { encoding: 'utf8' });
    assert.equal(bad.status, 2);
    assert.match(bad.stderr, /column jmax must be a finite number, got "nope"/);
    assert.doesNotMatch(bad.stderr, /at .*\.js:\d+/, 'no stack trace');
    const missing = spawnSync(process.execPath, [main, 'bench', 'timing', '--cases', join(dir, 'none.csv')], {
      encoding: 'utf8',
    });
    assert.equal(missing.status, 2);
    assert.match(missing.stderr, /cannot read \(ENOENT\)/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
