// The 3-D view: every robot drawn from robots.describe (capsules), posed from robots.state, its
// last plan ghosted (end pose and TCP path), the simulated scene's objects from sim.scene and
// camera frusta from the cameras' metadata. Renders only when something changed.
import * as THREE from 'three';
import { OrbitControls } from '/console/vendor/OrbitControls.js';
import { bandColor, boundingRadius, clearances } from './clearance.js';
import { ArmModel, capsuleMesh, matrix } from './robot-model.js';

const SPACING = 1.5;
const rgb = (c) => new THREE.Color(c[0] / 255, c[1] / 255, c[2] / 255);
/** Materials every robot and rebuild uses: kept when what uses them is disposed. */
const SHARED = new WeakSet();
const shared = (m) => {
  SHARED.add(m);
  return m;
};
const LINK = shared(new THREE.MeshStandardMaterial({ color: 0x8aa4c8, roughness: 0.6 }));
const HIT = shared(new THREE.MeshStandardMaterial({ color: 0xe04040, roughness: 0.6 }));
const BAND = new Map();
/** The link material for a clearance band colour (one material per colour). */
const bandMaterial = (color) => {
  if (!BAND.has(color)) BAND.set(color, shared(new THREE.MeshStandardMaterial({ color, roughness: 0.6 })));
  return BAND.get(color);
};
/** Clearances are recomputed at most this often (ms): a drawing aid, not a check. */
const CLEARANCE_MS = 100;
const GHOST = shared(
  new THREE.MeshBasicMaterial({ color: 0x40c0ff, transparent: true, opacity: 0.22, depthWrite: false }),
);
const PATH = shared(new THREE.LineBasicMaterial({ color: 0x40c0ff }));
const FRUSTUM = shared(new THREE.LineBasicMaterial({ color: 0xffc040 }));

/** Frees the GPU buffers of a subtree taken out of the scene (three keeps them until disposed). */
function dispose(root) {
  root.traverse((o) => {
    o.geometry?.dispose();
    if (o.material && !SHARED.has(o.material)) o.material.dispose();
  });
}

function shapeMesh(shape, color) {
  const material = new THREE.MeshStandardMaterial({ color: rgb(color), roughness: 0.8 });
  if (shape.kind === 'box') return new THREE.Mesh(new THREE.BoxGeometry(...shape.size), material);
  if (shape.kind === 'sphere') return new THREE.Mesh(new THREE.SphereGeometry(shape.radius, 20, 14), material);
  const m = new THREE.Mesh(new THREE.CylinderGeometry(shape.radius, shape.radius, shape.height, 24), material);
  m.rotation.x = Math.PI / 2; // three's cylinder runs along y, the scene's along z
  const g = new THREE.Group();
  g.add(m);
  return g;
}

function obstacleMesh(o) {
  const color = o.color ?? [128, 128, 128];
  if (o.shape === 'capsule')
    return capsuleMesh(o.a, o.b, o.radius, new THREE.MeshStandardMaterial({ color: rgb(color) }));
  if (o.shape === 'sphere') {
    const m = shapeMesh({ kind: 'sphere', radius: o.radius }, color);
    m.position.set(...o.center);
    return m;
  }
  const m = shapeMesh({ kind: 'box', size: o.half.map((h) => 2 * h) }, color);
  m.matrixAutoUpdate = false;
  m.matrix.copy(matrix(o.pose));
  return m;
}

/** A camera's frustum from its intrinsics; `pose` is 7 numbers (xyz, quaternion) or a 12-number transform. */
function frustum(meta, pose) {
  const { fx, fy, cx, cy } = meta.intrinsics;
  const d = 0.12;
  const corner = (u, v) => new THREE.Vector3(((u - cx) / fx) * d, ((v - cy) / fy) * d, d);
  const c = [corner(0, 0), corner(meta.width, 0), corner(meta.width, meta.height), corner(0, meta.height)];
  const o = new THREE.Vector3();
  const pts = [o, c[0], o, c[1], o, c[2], o, c[3], c[0], c[1], c[1], c[2], c[2], c[3], c[3], c[0]];
  const lines = new THREE.LineSegments(new THREE.BufferGeometry().setFromPoints(pts), FRUSTUM);
  if (pose.length === 12) matrix(pose).decompose(lines.position, lines.quaternion, lines.scale);
  else {
    const [x, y, z, qx, qy, qz, qw] = pose;
    lines.position.set(x, y, z);
    lines.quaternion.set(qx, qy, qz, qw).normalize();
  }
  return lines;
}

/**
 * Where a camera is fixed: the scene's link mount for a simulated one (its metadata gives the
 * world pose at capture, which would lag the link), else its metadata's extrinsics.
 */
function cameraMount(r, camera) {
  const m = r.desc.scene?.cameras?.find((s) => s.name === camera.name);
  if (m && m.mount !== 'world' && r.arms.get(m.mount.arm)?.links.has(m.mount.link))
    return { frame: `${m.mount.arm}/${m.mount.link}`, pose: m.pose };
  return camera.meta.extrinsics;
}

/** The object a frame names: `world`, `<arm>/<link>`, or a `<link>` only one arm has; else null. */
function frameObject(r, frame) {
  if (frame === 'world') return r.group;
  const slash = frame.indexOf('/');
  const link = slash < 0 ? frame : frame.slice(slash + 1);
  const owners = [...r.arms].filter(
    ([name, arm]) => (slash < 0 || name === frame.slice(0, slash)) && arm.links.has(link),
  );
  return owners.length === 1 ? owners[0][1].linkFrame(link) : null;
}

export class View3d {
  constructor(container) {
    this.container = container;
    this.robots = new Map();
    this.scene = new THREE.Scene();
    this.scene.background = new THREE.Color(0x101418);
    this.camera = new THREE.PerspectiveCamera(45, 1, 0.01, 50);
    this.camera.up.set(0, 0, 1);
    this.camera.position.set(1.4, -1.2, 1.0);
    this.renderer = new THREE.WebGLRenderer({ antialias: true, preserveDrawingBuffer: true });
    container.appendChild(this.renderer.domElement);
    this.controls = new OrbitControls(this.camera, this.renderer.domElement);
    this.controls.target.set(0.2, 0, 0.2);
    this.controls.addEventListener('change', () => this.dirty());
    this.scene.add(new THREE.HemisphereLight(0xffffff, 0x303040, 2.2));
    const sun = new THREE.DirectionalLight(0xffffff, 1.5);
    sun.position.set(1, -1, 2);
    this.scene.add(sun);
    const grid = new THREE.GridHelper(4, 40, 0x445566, 0x263038);
    grid.rotation.x = Math.PI / 2;
    this.scene.add(grid);
    this.scene.add(new THREE.AxesHelper(0.2));
    new ResizeObserver(() => this.resize()).observe(container);
    this.resize();
  }

  resize() {
    const w = this.container.clientWidth || 640;
    const h = this.container.clientHeight || 400;
    this.renderer.setSize(w, h, false);
    this.camera.aspect = w / h;
    this.camera.updateProjectionMatrix();
    this.dirty();
  }

  dirty() {
    if (this.pending) return;
    this.pending = requestAnimationFrame(() => {
      this.pending = 0;
      this.controls.update();
      this.renderer.render(this.scene, this.camera);
      this.frames = (this.frames ?? 0) + 1;
    });
  }

  /** Adds (or rebuilds) a robot from its robots.describe result. */
  addRobot(desc) {
    const old = this.robots.get(desc.robot)?.group;
    old?.removeFromParent();
    if (old) dispose(old);
    const group = new THREE.Group();
    group.position.y = this.robots.has(desc.robot)
      ? this.robots.get(desc.robot).group.position.y
      : this.robots.size * SPACING;
    const hits = new Set();
    const arms = new Map();
    const ghosts = new Map();
    for (const a of desc.arms) {
      const arm = new ArmModel(a, (link) => (hits.has(`${a.name}/${link}`) ? HIT : LINK));
      group.add(arm.root);
      arms.set(a.name, arm);
      const ghost = new ArmModel(a, () => GHOST);
      ghost.root.visible = false;
      group.add(ghost.root);
      ghosts.set(a.name, { model: ghost, path: null, id: null });
    }
    for (const o of desc.obstacles) group.add(obstacleMesh(o));
    const layout = desc.scene;
    if (layout) {
      const t = layout.table;
      const slab = new THREE.Mesh(
        new THREE.BoxGeometry(t.size[0], t.size[1], 0.02),
        new THREE.MeshStandardMaterial({ color: rgb(t.color), roughness: 0.9 }),
      );
      slab.position.set(t.center[0], t.center[1], t.height - 0.01);
      group.add(slab);
      for (const o of layout.obstacles) group.add(obstacleMesh(o));
    }
    const objects = new Map();
    for (const o of layout?.objects ?? []) {
      const m = shapeMesh(o.shape, o.color);
      m.visible = false;
      m.userData.shape = o.shape;
      group.add(m);
      objects.set(o.name, m);
    }
    this.scene.add(group);
    const plane = desc.table;
    const tableZ = layout ? layout.table.height : plane.normal[2] === 1 ? plane.offset : null;
    this.robots.set(desc.robot, {
      desc,
      group,
      arms,
      ghosts,
      objects,
      frusta: new Map(),
      hits,
      tableZ,
      clearance: null,
    });
    this.dirty();
  }

  /** A robots.state notification: measured joints of each arm. */
  setState(robot, arms) {
    const r = this.robots.get(robot);
    if (!r || !arms) return;
    for (const [name, s] of Object.entries(arms)) r.arms.get(name)?.setJoints(s.q);
    if (!(performance.now() - (r.clearedAt ?? 0) < CLEARANCE_MS)) this.recolor(r);
    this.dirty();
  }

  /** Colours each link by its clearance band, the link of the last collision red. */
  recolor(r) {
    r.clearedAt = performance.now();
    r.group.updateWorldMatrix(true, true);
    const spheres = [...r.objects.values()]
      .filter((m) => m.visible)
      .map((m) => ({
        center: m.getWorldPosition(new THREE.Vector3()),
        radius: boundingRadius(m.userData.shape),
        heldBy: m.userData.heldBy,
      }));
    const tableZ = r.tableZ === null ? null : r.tableZ + r.group.position.z;
    r.clearance = clearances(r.arms, spheres, tableZ);
    for (const [name, arm] of r.arms)
      for (const mesh of arm.meshes) {
        const band = bandColor(r.clearance.get(mesh));
        mesh.material = r.hits.has(`${name}/${mesh.userData.link}`) ? HIT : band === null ? LINK : bandMaterial(band);
      }
  }

  /** The smallest clearance (m) of each link of an arm, as last computed (for the page and tests). */
  clearance(robot, arm) {
    const r = this.robots.get(robot);
    const model = r?.arms.get(arm);
    if (!model || !r.clearance) return null;
    const out = {};
    for (const mesh of model.meshes) {
      const link = mesh.userData.link;
      out[link] = Math.min(out[link] ?? Infinity, r.clearance.get(mesh));
    }
    return out;
  }

  /** robots.plans: each arm's last trajectory, its end pose ghosted and its TCP path drawn. */
  setPlans(robot, plans) {
    const r = this.robots.get(robot);
    if (!r) return;
    for (const [arm, p] of Object.entries(plans)) {
      const g = r.ghosts.get(arm);
      if (!g || g.id === p.id) continue;
      g.id = p.id;
      const pts = [];
      const step = Math.max(1, Math.floor(p.points.length / 60));
      for (let i = 0; i < p.points.length; i += step) {
        g.model.setJoints(p.points[i].q);
        pts.push(g.model.tcpWorld());
      }
      g.model.setJoints(p.points[p.points.length - 1].q);
      pts.push(g.model.tcpWorld());
      if (g.path) {
        g.path.removeFromParent();
        dispose(g.path);
      }
      g.path = new THREE.Line(new THREE.BufferGeometry().setFromPoints(pts), PATH);
      g.path.applyMatrix4(new THREE.Matrix4().copy(r.group.matrixWorld).invert());
      r.group.add(g.path);
      g.model.root.visible = true;
    }
    this.dirty();
  }

  /** sim.scene: object poses and the last collision (its link drawn red until the next). */
  setScene(robot, truth) {
    const r = this.robots.get(robot);
    if (!r || !truth) return;
    for (const o of truth.objects) {
      const m = r.objects.get(o.name);
      if (!m) continue;
      const [x, y, z, qx, qy, qz, qw] = o.pose;
      m.position.set(x, y, z);
      m.quaternion.set(qx, qy, qz, qw);
      m.visible = true;
      m.userData.heldBy = o.held_by;
    }
    const last = truth.collisions?.last;
    r.hits.clear();
    if (last && truth.collisions.count > 0) r.hits.add(`${last.arm}/${last.link}`);
    this.recolor(r);
    this.dirty();
  }

  /**
   * robots.cameras: a frustum per colour stream with intrinsics and a mount, redrawn when its
   * metadata changes (a world pose at capture moves with each frame); one fixed to a link is in
   * the link's frame, so it follows every state update.
   */
  setCameras(robot, cameras) {
    const r = this.robots.get(robot);
    if (!r) return;
    for (const c of cameras) {
      const meta = c.meta;
      const mount = c.kind === 'color' && meta?.intrinsics ? cameraMount(r, c) : null;
      if (!mount) continue;
      const key = JSON.stringify([mount, meta.intrinsics, meta.width, meta.height]);
      const old = r.frusta.get(c.name);
      if (old?.userData.key === key) continue;
      if (old) {
        // A link's holder was made for this frustum alone.
        (old.parent === r.group ? old : old.parent)?.removeFromParent();
        dispose(old);
        r.frusta.delete(c.name);
      }
      const parent = frameObject(r, mount.frame);
      if (!parent) continue;
      const f = frustum(meta, mount.pose);
      f.userData.key = key;
      parent.add(f);
      r.frusta.set(c.name, f);
    }
    this.dirty();
  }

  /** For tests and the robot list: an arm's shown joints and TCP (the robot's world frame, m). */
  pose(robot, arm) {
    const r = this.robots.get(robot);
    const a = r?.arms.get(arm);
    if (!a) return null;
    const tcp = a.tcpWorld().sub(r.group.position);
    return { q: a.q, tcp: [tcp.x, tcp.y, tcp.z], meshes: a.meshes.length };
  }
}
