// validateTrajectory checks plain points by hand and only the header and two points with Ajv
// (Ajv over 100,000 points blocked a controller ~2 s of CPU): seeded random trajectories, valid
// and broken, must get exactly the verdict and messages of the full schema check.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Prng } from '../../../robot/common/prng.js';
import { formatIssues } from '../../../robot/common/validation/issue.js';
import { compileSchema } from '../../../robot/common/validation/json-schema.js';
import { trajectorySchema } from '../../../robot/link/protocol-schemas.js';
import { validateTrajectory } from '../../../robot/link/protocol-validate.js';

const full = compileSchema(trajectorySchema);

type Mutation = (p: Record<string, unknown>, rng: Prng) => void;
const mutations: Mutation[] = [
  (p) => delete p.q,
  (p) => (p.t = -1),
  (p) => (p.t = 90_000),
  (p) => (p.t = '0.1'),
  (p) => ((p.q as unknown[])[0] = 'x'),
  (p) => (p.q = []),
  (p) => (p.q = Array.from({ length: 65 }, () => 0)),
  (p) => (p.dq = null),
  (p) => (p.x_vendor = { a: 1 }),
  (p) => (p.qd = [0]),
  (p) => Object.defineProperty(p, '__proto__', { value: {}, enumerable: true }),
  (p, rng) => ((p.ddq as unknown[])[rng.int(3)] = true),
];

function trajectory(rng: Prng, n: number): Record<string, unknown> {
  const joints = 3;
  const points = Array.from({ length: n }, (_, k) => ({
    t: k * 0.01,
    q: Array.from({ length: joints }, () => rng.uniform(-1, 1)),
    dq: Array.from({ length: joints }, () => rng.uniform(-0.1, 0.1)),
    ddq: Array.from({ length: joints }, () => rng.uniform(-0.1, 0.1)),
  }));
  return { v: 1, id: 't1', arm: 'arm', joints: ['a', 'b', 'c'], time: 0, start_time: 0, expires_at: 5, points };
}

test("property (seeded): the hand check of points gives the full schema check's verdict and messages", () => {
  const rng = new Prng(31);
  let broken = 0;
  for (let trial = 0; trial < 400; trial++) {
    const m = trajectory(rng, 2 + rng.int(39));
    const points = m.points as Record<string, unknown>[];
    if (trial % 4 !== 0) mutations[rng.int(mutations.length)]!(points[rng.int(points.length)]!, rng);
    const want = full(m);
    const got = validateTrajectory(m);
    if (want.length > 0) {
      broken++;
      assert.equal(got.ok, false, `trial ${trial}: accepted`);
      if (!got.ok) assert.equal(got.message, formatIssues(want, { root: 'trajectory' }), `trial ${trial}`);
    } else assert.equal(got.ok, true, `trial ${trial}: ${got.ok ? '' : got.message}`);
  }
  assert.ok(broken > 200, `${broken} broken`);
});

test('a 100,000-point trajectory is valid; one bad point among them is named', () => {
  const rng = new Prng(5);
  const m = trajectory(rng, 100_000);
  assert.equal(validateTrajectory(m).ok, true);
  ((m.points as Record<string, unknown>[])[77_777]!.q as unknown[])[1] = 'x';
  const r = validateTrajectory(m);
  assert.ok(
    !r.ok && /^trajectory\.points\[77777\]\.q\[1\]: must be a finite number/.test(r.message),
    r.ok ? '' : r.message,
  );
});
