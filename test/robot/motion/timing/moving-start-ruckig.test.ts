import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { JerkProfile } from '../../../../robot/motion/timing/profile.js';
import { movingToRest } from '../../../../robot/motion/timing/moving-start.js';
import { endViolation, fixtureDir, loadCases, profileViolation } from './helpers.js';

/** The oracle's brake_duration column (parseTimingCases reads only the common columns). */
function brakeDurations(name: string): Float64Array {
  const lines = readFileSync(fixtureDir + name, 'utf8')
    .trim()
    .split('\n');
  const col = lines[0].split(',').indexOf('brake_duration');
  return Float64Array.from(lines.slice(1), (l) => Number(l.split(',')[col]));
}

test('Ruckig moving-start oracle (1,000 cases, 107 braking): total and brake durations to 1e-9 relative', () => {
  const name = 'ruckig-1dof-moving-start.csv';
  const c = loadCases(name);
  const brake = brakeDurations(name);
  assert.equal(c.count, 1000);
  const prof = new JerkProfile();
  const bad: string[] = [];
  let braking = 0;
  for (let i = 0; i < c.count; i++) {
    const [d, V, A, J, v0, a0] = [c.d[i], c.vmax[i], c.amax[i], c.jmax[i], c.v0[i], c.a0[i]];
    const what = `case ${c.ids[i]}: d ${d}, V ${V}, A ${A}, J ${J}, v0 ${v0}, a0 ${a0}`;
    assert.equal(movingToRest(d, v0, a0, V, A, J, prof), 'ok', what);
    let tb = 0;
    for (let k = 0; k < prof.brakeSegments; k++) tb += prof.dur[k];
    if (brake[i] > 0) braking++;
    const relT = Math.abs(prof.duration - c.duration[i]) / c.duration[i];
    const relB = Math.abs(tb - brake[i]) / Math.max(brake[i], c.duration[i]);
    if (relT > 1e-9 || relB > 1e-9) {
      bad.push(`${what}: duration ${prof.duration} vs ${c.duration[i]}, brake ${tb} vs ${brake[i]}`);
      continue;
    }
    const viol =
      profileViolation(prof, { V, A, J }, prof.brakeSegments) ||
      endViolation(prof, d, 1e-9 * (1 + Math.abs(d) + (v0 * v0) / A));
    if (viol) bad.push(`${what}: ${viol}`);
  }
  assert.equal(braking, 107);
  assert.equal(bad.length, 0, `${bad.length} cases differ, first: ${bad.slice(0, 5).join('\n')}`);
});
