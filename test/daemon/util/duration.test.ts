import { test } from 'node:test';
import assert from 'node:assert/strict';
import { formatDuration, parseDuration } from '../../../daemon/util/duration.js';

test('keep-alive durations: seconds, Go-style strings, 0 = now, negative = never', () => {
  const cases: [unknown, number][] = [
    [0, 0],
    [30, 30_000],
    [1.5, 1500],
    ['300', 300_000],
    ['0', 0],
    ['-0', 0],
    ['250ms', 250],
    ['90s', 90_000],
    ['5m', 300_000],
    ['1h30m', 5_400_000],
    ['1.5h', 5_400_000],
    ['2h0m3s', 7_203_000],
    ['1000us', 1],
    ['1000µs', 1],
    ['3000000ns', 3],
    [' 10m ', 600_000],
    [-1, -1],
    [-0.001, -1],
    ['-1', -1],
    ['-5m', -1],
    ['-1h30m', -1],
  ];
  for (const [input, ms] of cases) assert.deepEqual(parseDuration(input), { ms }, JSON.stringify(input));
});

test('anything else is a rule naming the accepted forms', () => {
  for (const bad of ['', '5 minutes', 'm', '1d', '5m30', 'h1', '--5m', '1e3', true, null, {}, [], Infinity, NaN]) {
    const r = parseDuration(bad);
    assert.ok(
      'rule' in r && /must be a duration: seconds as a number, or a string like "30s"/.test(r.rule),
      `${String(bad)} gave ${JSON.stringify(r)}`,
    );
  }
});

test('formatting round-trips through the parser', () => {
  const cases: [number, string][] = [
    [-1, 'never'],
    [0, 'now'],
    [250, '250ms'],
    [1500, '1.5s'],
    [90_000, '1m30s'],
    [300_000, '5m'],
    [5_400_000, '1h30m'],
    [3_600_000, '1h'],
    [7_203_000, '2h3s'],
  ];
  for (const [ms, text] of cases) {
    assert.equal(formatDuration(ms), text);
    if (ms > 0) assert.deepEqual(parseDuration(text), { ms }, text);
  }
});
