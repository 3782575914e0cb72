import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Prng } from '../../../robot/common/prng.js';
import { segmentDistance } from '../../../robot/safety/segment-distance.js';

/** Distance between segments given as [ax, ay, az, bx, by, bz]. */
const dist = (s1: number[], s2: number[]): number =>
  segmentDistance(Float64Array.from(s1), 0, 3, Float64Array.from(s2), 0, 3);
/** Capsule distance = segment distance − both radii. */
const capsule = (s1: number[], r1: number, s2: number[], r2: number): number => dist(s1, s2) - r1 - r2;

test('crossing segments: the distance is their separation along the common normal', () => {
  assert.equal(dist([-1, 0, 0, 1, 0, 0], [0, -1, 0.3, 0, 1, 0.3]), 0.3);
  assert.equal(dist([-1, 0, 0, 1, 0, 0], [0, -1, 0, 0, 1, 0]), 0);
  // Crossing capsules of radius 0.1 and 0.15 whose axes are 0.3 apart: a 0.05 m gap.
  assert.ok(Math.abs(capsule([-1, 0, 0, 1, 0, 0], 0.1, [0, -1, 0.3, 0, 1, 0.3], 0.15) - 0.05) < 1e-15);
  // Skew lines whose closest points lie outside a segment: clamped to the endpoint.
  assert.ok(Math.abs(dist([0, 0, 0, 1, 0, 0], [2, -1, 1, 2, 1, 1]) - Math.SQRT2) < 1e-15);
});

test('touching capsules have distance 0; just apart and just overlapping have the sign of the gap', () => {
  for (const gap of [0, 1e-9, -1e-9]) {
    const d = capsule([0, 0, 0, 0, 0, 1], 0.05, [0.1 + gap, 0, 0.5, 0.1 + gap, 1, 0.5], 0.05);
    assert.ok(Math.abs(d - gap) < 1e-15, `gap ${gap}: ${d}`);
  }
  // End caps touching: collinear capsules 2r apart tip to tip.
  assert.ok(Math.abs(capsule([0, 0, 0, 0, 0, 1], 0.05, [0, 0, 1.1, 0, 0, 2], 0.05)) < 1e-15);
});

test('parallel segments: overlapping, offset and collinear-disjoint', () => {
  // Side by side, overlapping in extent: their separation.
  assert.ok(Math.abs(dist([0, 0, 0, 1, 0, 0], [0.5, 0.2, 0, 1.5, 0.2, 0]) - 0.2) < 1e-15);
  // Antiparallel, identical extent.
  assert.ok(Math.abs(dist([0, 0, 0, 1, 0, 0], [1, 0, 0.4, 0, 0, 0.4]) - 0.4) < 1e-15);
  // Parallel, no overlap in extent: endpoint to endpoint.
  assert.ok(Math.abs(dist([0, 0, 0, 1, 0, 0], [2, 0.3, 0, 3, 0.3, 0]) - Math.hypot(1, 0.3)) < 1e-15);
  // Collinear and disjoint.
  assert.ok(Math.abs(dist([0, 0, 0, 1, 0, 0], [1.5, 0, 0, 2, 0, 0]) - 0.5) < 1e-15);
  // Nearly parallel (1e-12 rad): still the separation.
  assert.ok(Math.abs(dist([0, 0, 0, 1, 0, 0], [0, 0.2, 0, 1, 0.2 + 1e-12, 0]) - 0.2) < 1e-12);
});

test('degenerate segments: point to point, point to segment', () => {
  assert.ok(Math.abs(dist([1, 2, 3, 1, 2, 3], [1, 2, 4, 1, 2, 4]) - 1) < 1e-15);
  assert.ok(Math.abs(dist([0.5, 1, 0, 0.5, 1, 0], [0, 0, 0, 1, 0, 0]) - 1) < 1e-15);
  assert.ok(Math.abs(dist([0, 0, 0, 1, 0, 0], [2, 0, 0, 2, 0, 0]) - 1) < 1e-15);
});

test('matches a brute-force search over both segments (seed 17, 300 random pairs)', () => {
  const r = new Prng(17);
  const grid = 120;
  for (let k = 0; k < 300; k++) {
    const s1 = Array.from({ length: 6 }, () => r.uniform(-1, 1));
    // Some pairs nearly parallel.
    const s2 =
      k % 5 === 0
        ? s1.map((x, i) => x + (i < 3 ? 0.3 : 0.3 + r.uniform(-1e-6, 1e-6)))
        : Array.from({ length: 6 }, () => r.uniform(-1, 1));
    const d = dist(s1, s2);
    let brute = Infinity;
    for (let i = 0; i <= grid; i++) {
      const u = i / grid;
      const px = s1[0] + u * (s1[3] - s1[0]),
        py = s1[1] + u * (s1[4] - s1[1]),
        pz = s1[2] + u * (s1[5] - s1[2]);
      for (let j = 0; j <= grid; j++) {
        const v = j / grid;
        brute = Math.min(
          brute,
          Math.hypot(
            px - s2[0] - v * (s2[3] - s2[0]),
            py - s2[1] - v * (s2[4] - s2[1]),
            pz - s2[2] - v * (s2[5] - s2[2]),
          ),
        );
      }
    }
    // The grid can only overestimate, by at most half a cell on each segment.
    const cell =
      (Math.hypot(s1[3] - s1[0], s1[4] - s1[1], s1[5] - s1[2]) +
        Math.hypot(s2[3] - s2[0], s2[4] - s2[1], s2[5] - s2[2])) /
      grid;
    assert.ok(d <= brute + 1e-12 && brute - d <= cell, `pair ${k} ${s1} | ${s2}: ${d} vs brute ${brute}`);
  }
});
