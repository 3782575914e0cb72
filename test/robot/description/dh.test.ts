import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Prng } from '../../../robot/common/prng.js';
import { dhChain, type DhConvention, type DhRow } from '../../../robot/description/dh.js';
import type { JointDescription } from '../../../robot/description/types.js';
import { identity } from '../../../robot/math/transform.js';
import { KinematicChain } from '../../../robot/kinematics/chain.js';
import { forwardKinematics } from '../../../robot/kinematics/forward.js';

// Independent reference: plain 4×4 products of the textbook DH matrices.
type M = number[][];
const mul = (a: M, b: M): M => a.map((r) => b[0].map((_, j) => r.reduce((s, x, k) => s + x * b[k][j], 0)));
const rz = (t: number): M => [
  [Math.cos(t), -Math.sin(t), 0, 0],
  [Math.sin(t), Math.cos(t), 0, 0],
  [0, 0, 1, 0],
  [0, 0, 0, 1],
];
const rx = (t: number): M => [
  [1, 0, 0, 0],
  [0, Math.cos(t), -Math.sin(t), 0],
  [0, Math.sin(t), Math.cos(t), 0],
  [0, 0, 0, 1],
];
const tr = (x: number, y: number, z: number): M => [
  [1, 0, 0, x],
  [0, 1, 0, y],
  [0, 0, 1, z],
  [0, 0, 0, 1],
];

function reference(
  convention: DhConvention,
  rows: DhRow[],
  q: number[],
  flange: Omit<DhRow, 'name' | 'link' | 'type'>,
): M {
  let t: M = tr(0, 0, 0);
  const all = [...rows.map((r, i) => ({ ...r, q: q[i] })), { ...flange, type: 'revolute' as const, q: 0 }];
  for (const r of all) {
    const theta = r.theta + (r.type === 'revolute' ? r.q : 0);
    const d = r.d + (r.type === 'prismatic' ? r.q : 0);
    t =
      convention === 'standard'
        ? mul(t, mul(mul(rz(theta), tr(0, 0, d)), mul(tr(r.a, 0, 0), rx(r.alpha))))
        : mul(t, mul(mul(rx(r.alpha), tr(r.a, 0, 0)), mul(rz(theta), tr(0, 0, d))));
  }
  return t;
}

for (const convention of ['standard', 'modified'] as const) {
  test(`${convention} DH chain matches the textbook matrix product (seed 21, 100 random tables)`, () => {
    const r = new Prng(21);
    for (let k = 0; k < 100; k++) {
      const n = 1 + r.int(7);
      const rows: DhRow[] = Array.from({ length: n }, (_, i) => ({
        name: `j${i}`,
        link: `l${i}`,
        type: r.next() < 0.2 ? 'prismatic' : 'revolute',
        a: r.uniform(-0.5, 0.5),
        d: r.uniform(-0.5, 0.5),
        alpha: r.uniform(-Math.PI, Math.PI),
        theta: r.uniform(-1, 1),
      }));
      const flange = {
        a: r.uniform(-0.1, 0.1),
        d: r.uniform(0, 0.2),
        alpha: r.uniform(-2, 2),
        theta: r.uniform(-2, 2),
      };
      const spec = dhChain(convention, 'base', rows, flange);
      const joints: JointDescription[] = spec.joints.map((j) => ({
        ...j,
        limits: { lower: -10, upper: 10, velocity: 1, acceleration: 1, jerk: 1 },
      }));
      const chain = new KinematicChain({ name: 't', joints, links: spec.links, flange: spec.flange, tcp: identity() });
      const q = rows.map(() => r.uniform(-3, 3));
      const got = forwardKinematics(chain, q, new Float64Array(12));
      const want = reference(convention, rows, q, flange);
      for (let i = 0; i < 3; i++) {
        for (let j = 0; j < 4; j++) {
          assert.ok(
            Math.abs(got[4 * i + j] - want[i][j]) < 1e-12,
            `table ${k} (${JSON.stringify(rows)}, q ${q}): T[${i}][${j}] ${got[4 * i + j]} vs ${want[i][j]}`,
          );
        }
      }
    }
  });
}

test("DH links: base at frame 0, each joint's link at its own frame", () => {
  const spec = dhChain('standard', 'base', [
    { name: 'a', link: 'la', type: 'revolute', a: 1, d: 0, alpha: 0, theta: 0 },
    { name: 'b', link: 'lb', type: 'revolute', a: 1, d: 0, alpha: 0, theta: 0 },
  ]);
  assert.deepEqual(
    spec.links.map((l) => [l.name, l.frame]),
    [
      ['base', 0],
      ['la', 1],
      ['lb', 2],
    ],
  );
  assert.deepEqual(
    spec.joints.map((j) => [j.parent, j.child]),
    [
      ['base', 'la'],
      ['la', 'lb'],
    ],
  );
  // Without a flange row the standard flange is DH frame n: a = 1 along x after the last joint.
  assert.deepEqual(Array.from(spec.flange), [1, 0, 0, 1, 0, 1, 0, 0, 0, 0, 1, 0]);
});
