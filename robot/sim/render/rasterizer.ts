// A deterministic software rasteriser for pinhole cameras. Camera (optical) frame: +z forward,
// +x right, +y down. Pixel (u, v) covers [u, u+1) × [v, v+1) with its centre at (u+0.5, v+0.5);
// a camera-frame point (x, y, z) projects to u = fx·x/z + cx, v = fy·y/z + cy, so a pixel is lit
// by the triangle that covers its centre (top-left rule on shared edges) and is nearest along z.
import { compose, invert, type Transform } from '../../math/transform.js';
import type { Rgb } from '../scene/types.js';
import { checkIntrinsics, type CameraIntrinsics } from './intrinsics.js';
import { MeshCache, type Primitive } from './mesh.js';
import { BACKGROUND, brightness, shadeChannel } from './shading.js';
import { depthFrom, downsample, fillRgb } from './framebuffer.js';

export interface RenderOptions {
  /** Also return a depth image. */
  depth?: boolean;
  /** 2×2 supersampling: colours averaged, depth the nearest of the four samples. Off by default. */
  supersample?: boolean;
  background?: Rgb;
}

export interface Frame {
  width: number;
  height: number;
  /** Row-major RGB, 3 bytes per pixel. */
  rgb: Uint8Array;
  /** Metres along the optical z axis per pixel, 0 where nothing was hit; null unless asked for. */
  depth: Float32Array | null;
}

/** Surfaces closer than this along the optical axis (m) are clipped away. */
export const NEAR_PLANE = 0.01;
export class Rasterizer {
  private readonly meshes = new MeshCache();
  /** Camera-frame vertices of the primitive being drawn. */
  private verts = new Float64Array(0);
  /** Near-plane clipping output: up to 4 points. */
  private readonly clipped = new Float64Array(12);
  private readonly viewFromWorld = new Float64Array(12);
  private readonly viewFromShape = new Float64Array(12);
  /** The triangle being filled: edge k is A·u + B·v + C. */
  private readonly edgeA = new Float64Array(3);
  private readonly edgeB = new Float64Array(3);
  private readonly edgeC = new Float64Array(3);
  // The target of the draw in progress (the supersampled one when asked for).
  private rgb = new Uint8Array(0);
  private invDepth = new Float32Array(0);
  private w = 0;
  private h = 0;
  private fx = 0;
  private fy = 0;
  private cx = 0;
  private cy = 0;

  /** Renders `primitives` seen from `worldFromOptical` (the camera's optical frame in the world). */
  render(
    camera: CameraIntrinsics,
    worldFromOptical: Transform,
    primitives: Primitive[],
    options: RenderOptions = {},
  ): Frame {
    checkIntrinsics(camera);
    const s = options.supersample ? 2 : 1;
    const { width, height } = camera;
    this.w = width * s;
    this.h = height * s;
    // Pixel areas scale with the image, so the intrinsics scale by s exactly (centres included).
    this.fx = camera.fx * s;
    this.fy = camera.fy * s;
    this.cx = camera.cx * s;
    this.cy = camera.cy * s;
    const n = this.w * this.h;
    this.rgb = s === 1 ? new Uint8Array(n * 3) : this.rgb.length === n * 3 ? this.rgb : new Uint8Array(n * 3);
    if (this.invDepth.length !== n) this.invDepth = new Float32Array(n);
    this.invDepth.fill(0);
    fillRgb(this.rgb, options.background ?? BACKGROUND);
    invert(this.viewFromWorld, worldFromOptical);
    for (const p of primitives) this.drawPrimitive(p, worldFromOptical);
    if (s === 1) return { width, height, rgb: this.rgb, depth: options.depth ? depthFrom(this.invDepth, n) : null };
    return downsample(this.rgb, this.invDepth, width, height, options.depth === true);
  }

  private drawPrimitive(p: Primitive, worldFromOptical: Transform): void {
    const mesh = this.meshes.get(p.shape);
    const m = compose(this.viewFromShape, this.viewFromWorld, p.pose);
    const src = mesh.positions;
    if (this.verts.length < src.length) this.verts = new Float64Array(src.length);
    const v = this.verts;
    for (let i = 0; i < src.length; i += 3) {
      const x = src[i],
        y = src[i + 1],
        z = src[i + 2];
      v[i] = m[0] * x + m[1] * y + m[2] * z + m[3];
      v[i + 1] = m[4] * x + m[5] * y + m[6] * z + m[7];
      v[i + 2] = m[8] * x + m[9] * y + m[10] * z + m[11];
    }
    const r = worldFromOptical;
    const [cr, cg, cb] = p.color;
    const tris = mesh.triangles;
    for (let t = 0; t < tris.length; t += 3) {
      const a = 3 * tris[t],
        b = 3 * tris[t + 1],
        c = 3 * tris[t + 2];
      const ax = v[a],
        ay = v[a + 1],
        az = v[a + 2];
      const ux = v[b] - ax,
        uy = v[b + 1] - ay,
        uz = v[b + 2] - az;
      const wx = v[c] - ax,
        wy = v[c + 1] - ay,
        wz = v[c + 2] - az;
      const nx = uy * wz - uz * wy,
        ny = uz * wx - ux * wz,
        nz = ux * wy - uy * wx;
      // Back faces (and faces seen edge-on) point away from the camera at the origin.
      if (nx * ax + ny * ay + nz * az >= 0) continue;
      if (az < NEAR_PLANE && v[b + 2] < NEAR_PLANE && v[c + 2] < NEAR_PLANE) continue;
      const len = Math.sqrt(nx * nx + ny * ny + nz * nz);
      const k = brightness(
        (r[0] * nx + r[1] * ny + r[2] * nz) / len,
        (r[4] * nx + r[5] * ny + r[6] * nz) / len,
        (r[8] * nx + r[9] * ny + r[10] * nz) / len,
      );
      const red = shadeChannel(cr, k),
        green = shadeChannel(cg, k),
        blue = shadeChannel(cb, k);
      if (az >= NEAR_PLANE && v[b + 2] >= NEAR_PLANE && v[c + 2] >= NEAR_PLANE) {
        this.fill(ax, ay, az, v[b], v[b + 1], v[b + 2], v[c], v[c + 1], v[c + 2], red, green, blue);
        continue;
      }
      const q = this.clipped;
      const count = clipNear(v, a, b, c, q);
      for (let i = 1; i + 1 < count; i++)
        this.fill(
          q[0],
          q[1],
          q[2],
          q[3 * i],
          q[3 * i + 1],
          q[3 * i + 2],
          q[3 * i + 3],
          q[3 * i + 4],
          q[3 * i + 5],
          red,
          green,
          blue,
        );
    }
  }

  /** Fills the pixels whose centres a camera-frame triangle (all z ≥ NEAR_PLANE) covers, nearer than what is there. */
  private fill(
    ax: number,
    ay: number,
    az: number,
    bx: number,
    by: number,
    bz: number,
    cx: number,
    cy: number,
    cz: number,
    red: number,
    green: number,
    blue: number,
  ): void {
    const iza = 1 / az,
      izb = 1 / bz,
      izc = 1 / cz;
    const ua = this.fx * ax * iza + this.cx,
      va = this.fy * ay * iza + this.cy;
    let ub = this.fx * bx * izb + this.cx,
      vb = this.fy * by * izb + this.cy,
      iz1 = izb;
    let uc = this.fx * cx * izc + this.cx,
      vc = this.fy * cy * izc + this.cy,
      iz2 = izc;
    let area = (ub - ua) * (vc - va) - (uc - ua) * (vb - va);
    if (!(Math.abs(area) > 1e-12)) return;
    if (area < 0) {
      [ub, uc] = [uc, ub];
      [vb, vc] = [vc, vb];
      [iz1, iz2] = [iz2, iz1];
      area = -area;
    }
    const w = this.w;
    const i0 = Math.max(0, Math.ceil(Math.min(ua, ub, uc) - 0.5)),
      i1 = Math.min(w - 1, Math.floor(Math.max(ua, ub, uc) - 0.5));
    const j0 = Math.max(0, Math.ceil(Math.min(va, vb, vc) - 0.5)),
      j1 = Math.min(this.h - 1, Math.floor(Math.max(va, vb, vc) - 0.5));
    if (i0 > i1 || j0 > j1) return;
    // Edge functions E(u, v) = A·u + B·v + C, ≥ 0 inside; edge k lies opposite vertex k.
    const a0 = vb - vc,
      b0 = uc - ub,
      c0 = ub * vc - uc * vb;
    const a1 = vc - va,
      b1 = ua - uc,
      c1 = uc * va - ua * vc;
    const a2 = va - vb,
      b2 = ub - ua,
      c2 = ua * vb - ub * va;
    // A pixel centre exactly on an edge belongs to the triangle only if that edge is a top or left one.
    const t0 = a0 > 0 || (a0 === 0 && b0 > 0),
      t1 = a1 > 0 || (a1 === 0 && b1 > 0),
      t2 = a2 > 0 || (a2 === 0 && b2 > 0);
    // Inverse depth is affine in screen space: 1/z = pu·u + pv·v + pc.
    const pu = (a0 * iza + a1 * iz1 + a2 * iz2) / area,
      pv = (b0 * iza + b1 * iz1 + b2 * iz2) / area,
      pc = (c0 * iza + c1 * iz1 + c2 * iz2) / area;
    const rgb = this.rgb,
      zb = this.invDepth;
    const ea = this.edgeA,
      eb = this.edgeB,
      ec = this.edgeC;
    ea[0] = a0;
    ea[1] = a1;
    ea[2] = a2;
    eb[0] = b0;
    eb[1] = b1;
    eb[2] = b2;
    ec[0] = c0;
    ec[1] = c1;
    ec[2] = c2;
    for (let j = j0; j <= j1; j++) {
      const y = j + 0.5;
      const r0 = b0 * y + c0,
        r1 = b1 * y + c1,
        r2 = b2 * y + c2;
      // Each edge crosses the row at pixel index −r/a − 0.5: the span runs one pixel past the
      // crossings; pixels more than one pixel inside all of them need no edge test.
      let lo = i0,
        hi = i1,
        sureLo = Number.NEGATIVE_INFINITY,
        sureHi = Number.POSITIVE_INFINITY;
      let empty = false;
      for (let e = 0; e < 3; e++) {
        const a = ea[e],
          r = eb[e] * y + ec[e];
        const x = -r / a - 0.5;
        if (a > 0) {
          lo = Math.max(lo, Math.ceil(x) - 1);
          sureLo = Math.max(sureLo, x + 1);
        } else if (a < 0) {
          hi = Math.min(hi, Math.floor(x) + 1);
          sureHi = Math.min(sureHi, x - 1);
        } else if (r < 0) empty = true;
        else if (r === 0) sureLo = Number.POSITIVE_INFINITY;
      }
      if (empty) continue;
      const rowZ = pv * y + pc;
      for (let i = lo; i <= hi; i++) {
        const x = i + 0.5;
        if (i < sureLo || i > sureHi) {
          const e0 = a0 * x + r0,
            e1 = a1 * x + r1,
            e2 = a2 * x + r2;
          if (e0 < 0 || e1 < 0 || e2 < 0) continue;
          if ((e0 === 0 && !t0) || (e1 === 0 && !t1) || (e2 === 0 && !t2)) continue;
        }
        const iz = pu * x + rowZ;
        const k = j * w + i;
        if (iz <= zb[k]) continue;
        zb[k] = iz;
        rgb[3 * k] = red;
        rgb[3 * k + 1] = green;
        rgb[3 * k + 2] = blue;
      }
    }
  }
}

/** Clips triangle (v[a], v[b], v[c]) to z ≥ NEAR_PLANE into `out` as a convex polygon; returns its vertex count. */
function clipNear(v: Float64Array, a: number, b: number, c: number, out: Float64Array): number {
  let count = 0;
  const idx = [a, b, c];
  for (let e = 0; e < 3; e++) {
    const p = idx[e],
      q = idx[(e + 1) % 3];
    const pz = v[p + 2],
      qz = v[q + 2];
    if (pz >= NEAR_PLANE) {
      out.set(v.subarray(p, p + 3), 3 * count++);
    }
    if (pz >= NEAR_PLANE !== qz >= NEAR_PLANE) {
      const t = (NEAR_PLANE - pz) / (qz - pz);
      out[3 * count] = v[p] + t * (v[q] - v[p]);
      out[3 * count + 1] = v[p + 1] + t * (v[q + 1] - v[p + 1]);
      out[3 * count + 2] = NEAR_PLANE;
      count++;
    }
  }
  return count;
}
