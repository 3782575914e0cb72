// Writes the timing fixtures that have no published oracle (run once, output committed):
//   node dist/test/robot/motion/timing/make-timing-fixtures.js
// - moving-start-reference.csv: 2,000 seeded moving-start cases, durations from the numeric
//   reference (bisection; brakes by Ruckig's rule), columns case,d,vmax,amax,jmax,v0,a0,duration;
// - ruckig-6dof-sync.csv: the Ruckig 1-DOF cases grouped six at a time as one 6-joint move;
//   rest-to-rest joints synchronise at the slowest joint's minimum time, so the oracle
//   duration of a group is the largest of its six Ruckig durations.
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Prng } from '../../../../robot/common/prng.js';
import { referenceDuration } from './moving-start-reference.js';

const dir = fileURLToPath(new URL('../../../../../test/fixtures/oracles/', import.meta.url));
const g = (x: number): string => x.toPrecision(17);

function movingStart(count: number, seed: number): string {
  const rng = new Prng(seed);
  const rows = ['case,d,vmax,amax,jmax,v0,a0,duration'];
  for (let i = 0; i < count; i++) {
    const V = rng.uniform(0.1, 3),
      A = rng.uniform(0.5, 10),
      J = rng.uniform(1, 100);
    const d = rng.uniform(-2, 2);
    // A quarter start at rest in one quantity; starts beyond the limits are common (±1.5×).
    const v0 = i % 4 === 1 ? 0 : rng.uniform(-1.5, 1.5) * V;
    const a0 = i % 4 === 2 ? 0 : rng.uniform(-1.5, 1.5) * A;
    rows.push(
      [i, d, V, A, J, v0, a0, referenceDuration(d, v0, a0, V, A, J)]
        .map((x, k) => (k === 0 ? String(x) : g(x)))
        .join(','),
    );
  }
  return rows.join('\n') + '\n';
}

function sixJointSync(): string {
  const lines = readFileSync(dir + 'ruckig-1dof-rest2rest.csv', 'utf8')
    .trim()
    .split('\n')
    .slice(1);
  const n = 6;
  const head = ['case'];
  for (const k of ['d', 'vmax', 'amax', 'jmax']) for (let j = 0; j < n; j++) head.push(`${k}${j}`);
  head.push('duration');
  const rows = [head.join(',')];
  for (let c = 0; c + n <= lines.length; c += n) {
    const cols = lines.slice(c, c + n).map((l) => l.split(','));
    const row = [String(c / n)];
    for (let k = 1; k <= 4; k++) for (const col of cols) row.push(col[k]);
    row.push(cols.reduce((m, col) => (Number(col[5]) > Number(m) ? col[5] : m), cols[0][5]));
    rows.push(row.join(','));
  }
  return rows.join('\n') + '\n';
}

writeFileSync(dir + 'ruckig-6dof-sync.csv', sixJointSync());
writeFileSync(dir + 'moving-start-reference.csv', movingStart(2000, 20240601));
