import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FaultSchedule, isActive, parseFault } from '../../../robot/sim/faults.js';

test('fault specs parse with defaults and keys', () => {
  assert.deepEqual(parseFault('stall,arm=left,joint=2,at=1,for=2'), {
    kind: 'stall',
    at: 1,
    for: 2,
    arm: 'left',
    joint: 2,
    offset: 0.2,
    p: 0.5,
    s: 0.3,
  });
  assert.deepEqual(parseFault('tracking,joint=wrist,offset=-0.1'), {
    kind: 'tracking',
    at: 0,
    for: Infinity,
    joint: 'wrist',
    offset: -0.1,
    p: 0.5,
    s: 0.3,
  });
  assert.equal(parseFault('drop,p=0.25').p, 0.25);
  assert.equal(parseFault('delay,s=1').s, 1);
  assert.equal(parseFault('disconnect,at=3,for=1').at, 3);
});

test('bad fault specs name the key, the rule and the value', () => {
  const cases: [string, RegExp][] = [
    ['explode', /kind must be one of disconnect, stall, tracking, drop, delay, late \(got "explode"\)/],
    ['drop,p=2', /p must be a probability in \[0, 1\] \(got "2"\)/],
    ['drop,p=', /p must be a probability/],
    ['delay,s=-1', /s must be a number ≥ 0 \(s\) \(got "-1"\)/],
    ['disconnect,at=NaN', /at must be a number ≥ 0/],
    ['tracking,joint=1,offset=x', /offset must be a finite number \(rad\) \(got "x"\)/],
    ['stall,at=1', /joint is required for stall/],
    ['delay,joint=1', /key "joint" is not one of at, for, s for delay/],
  ];
  for (const [spec, re] of cases) assert.throws(() => parseFault(spec), re, spec);
});

test('active window is [at, at + for)', () => {
  const f = parseFault('disconnect,at=1,for=2');
  assert.deepEqual(
    [0.99, 1, 2.99, 3].map((t) => isActive(f, t)),
    [false, true, true, false],
  );
});

test('schedule binds joints by index or name and rejects unknown ones', () => {
  const arms = new Map([
    ['a', ['j0', 'j1']],
    ['b', ['k0']],
  ]);
  const s = new FaultSchedule(
    [parseFault('stall,joint=j1,at=1'), parseFault('tracking,arm=b,joint=0,offset=0.5')],
    arms,
    10,
    1,
  );
  assert.deepEqual([...s.jointFaults('a', 10.5).stalled], []);
  assert.deepEqual([...s.jointFaults('a', 11).stalled], [1]);
  assert.deepEqual(s.jointFaults('b', 10).offset, [0.5]);
  assert.throws(
    () => new FaultSchedule([parseFault('stall,arm=c,joint=0')], arms, 0, 1),
    /arm must be one of a, b \(got "c"\)/,
  );
  assert.throws(
    () => new FaultSchedule([parseFault('stall,joint=5')], arms, 0, 1),
    /joint must be an index below 2 or one of j0, j1 \(got "5"\)/,
  );
  assert.throws(() => new FaultSchedule([parseFault('stall,joint=elbow')], arms, 0, 1), /\(got "elbow"\)/);
});
