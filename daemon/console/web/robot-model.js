// One arm as a three.js hierarchy built from robots.describe: chain frame i = frame i−1 · joint
// origin · motion(q_i) (URDF semantics), link capsules fixed in their frames, the TCP beneath
// the flange. `setJoints` poses it; `tcpWorld` reads forward kinematics back from the scene.
import * as THREE from 'three';

/** A robots.describe transform (12 numbers, row-major 3×4) as a Matrix4. */
export function matrix(t) {
  return new THREE.Matrix4().set(t[0], t[1], t[2], t[3], t[4], t[5], t[6], t[7], t[8], t[9], t[10], t[11], 0, 0, 0, 1);
}

function fixed(m) {
  const o = new THREE.Object3D();
  o.matrixAutoUpdate = false;
  o.matrix.copy(m);
  return o;
}

/** A capsule mesh between points a and b (three's capsule runs along its local y). */
export function capsuleMesh(a, b, radius, material) {
  const va = new THREE.Vector3(...a);
  const vb = new THREE.Vector3(...b);
  const length = va.distanceTo(vb);
  const mesh = new THREE.Mesh(new THREE.CapsuleGeometry(radius, length, 4, 12), material);
  mesh.position.copy(va).add(vb).multiplyScalar(0.5);
  if (length > 1e-9) mesh.quaternion.setFromUnitVectors(new THREE.Vector3(0, 1, 0), vb.sub(va).normalize());
  return mesh;
}

export class ArmModel {
  /** `material(linkName)` gives each capsule its material (the ghost shares one). */
  constructor(desc, material) {
    this.desc = desc;
    this.root = fixed(matrix(desc.base));
    this.frames = [new THREE.Object3D()];
    this.root.add(this.frames[0]);
    this.moving = [];
    for (const j of desc.joints) {
      const origin = fixed(matrix(j.origin));
      this.frames[this.frames.length - 1].add(origin);
      const m = new THREE.Object3D();
      origin.add(m);
      this.moving.push({ joint: j, object: m, axis: new THREE.Vector3(...j.axis) });
      this.frames.push(m);
    }
    this.links = new Map(desc.links.map((l) => [l.name, l]));
    this.meshes = [];
    for (const c of desc.capsules) {
      const link = this.links.get(c.link);
      if (!link) continue;
      const holder = fixed(matrix(link.offset));
      this.frames[link.frame].add(holder);
      const mesh = capsuleMesh(c.a, c.b, c.radius, material(c.link));
      mesh.userData.link = c.link;
      holder.add(mesh);
      this.meshes.push(mesh);
    }
    this.tcp = fixed(matrix(desc.flange).multiply(matrix(desc.tcp)));
    this.frames[this.frames.length - 1].add(this.tcp);
    this.q = desc.home.slice();
    this.setJoints(this.q);
  }

  setJoints(q) {
    this.q = q.slice();
    this.moving.forEach(({ joint, object, axis }, i) => {
      const v = q[i] ?? 0;
      if (joint.type === 'prismatic') object.position.copy(axis).multiplyScalar(v);
      else object.quaternion.setFromAxisAngle(axis, v);
    });
  }

  /** A new object fixed to link `name` (it moves with the link), for things mounted there; null if none. */
  linkFrame(name) {
    const link = this.links.get(name);
    if (!link) return null;
    const holder = fixed(matrix(link.offset));
    this.frames[link.frame].add(holder);
    return holder;
  }

  /** TCP position in the scene's world (after the scene's matrices are updated). */
  tcpWorld() {
    this.root.updateWorldMatrix(true, true);
    return new THREE.Vector3().setFromMatrixPosition(this.tcp.matrixWorld);
  }
}
