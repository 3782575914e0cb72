// The 3-D view's clearance bands (daemon/console/web/clearance.js, a browser module that Node
// imports too): segment distances and the per-capsule clearances to spheres, table and other arms.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import * as THREE from 'three';
import { repoRoot } from '../../../daemon/util/repo-root.js';

const load = () => import(pathToFileURL(join(repoRoot, 'daemon', 'console', 'web', 'clearance.js')).href);
const v = (x: number, y: number, z: number) => new THREE.Vector3(x, y, z);

test('segmentDistance: crossing, parallel, end to end, point to segment', async () => {
  const { segmentDistance } = await load();
  assert.equal(segmentDistance(v(-1, 0, 0), v(1, 0, 0), v(0, -1, 1), v(0, 1, 1)), 1);
  assert.equal(segmentDistance(v(0, 0, 0), v(1, 0, 0), v(0, 2, 0), v(1, 2, 0)), 2);
  assert.equal(segmentDistance(v(0, 0, 0), v(1, 0, 0), v(4, 0, 0), v(5, 0, 0)), 3);
  assert.equal(segmentDistance(v(0, 0, 0), v(2, 0, 0), v(1, 3, 0), v(1, 3, 0)), 3);
  assert.equal(segmentDistance(v(1, 1, 1), v(1, 1, 1), v(1, 1, 4), v(1, 1, 4)), 3);
});

test('clearances: nearest of sphere, table and the other arm; a held object does not count for its arm', async () => {
  const { clearances, bandColor } = await load();
  const capsule = (x: number, z0: number, z1: number, radius: number) => {
    const m = new THREE.Mesh(new THREE.CapsuleGeometry(radius, z1 - z0), new THREE.MeshBasicMaterial());
    m.position.set(x, 0, (z0 + z1) / 2);
    m.quaternion.setFromUnitVectors(v(0, 1, 0), v(0, 0, 1));
    return m;
  };
  const left = capsule(0, 0.2, 0.5, 0.05);
  const right = capsule(0.3, 0.2, 0.5, 0.05);
  const arms = new Map([
    ['left', { meshes: [left] }],
    ['right', { meshes: [right] }],
  ]);
  const near = (a: number, b: number) => Math.abs(a - b) < 1e-9;
  let c = clearances(arms, [], 0);
  assert.ok(near(c.get(left), 0.15), `table: ${c.get(left)}`); // 0.2 − 0.05 − 0
  c = clearances(arms, [], null);
  assert.ok(near(c.get(left), 0.2), `other arm: ${c.get(left)}`); // 0.3 − 2 × 0.05
  const ball = { center: v(0.1, 0, 0.3), radius: 0.04, heldBy: null };
  c = clearances(arms, [ball], null);
  assert.ok(near(c.get(left), 0.01), `sphere: ${c.get(left)}`);
  c = clearances(arms, [{ ...ball, heldBy: 'left' }], null);
  assert.ok(near(c.get(left), 0.2), 'held by this arm: ignored');
  assert.ok(near(c.get(right), 0.11), 'held by another arm: counted');
  assert.equal(bandColor(0.005), 0xe04040);
  assert.equal(bandColor(0.02), 0xff9030);
  assert.equal(bandColor(0.2), null);
});
