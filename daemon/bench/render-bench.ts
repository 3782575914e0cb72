// Times a scene camera's frames: rendering (scene → primitives → rasterised RGB and depth) and
// encoding (sharp) apart, with the arms swaying through deterministic joint offsets so forward
// kinematics and a changing picture are part of every frame.
import { encodeDepth, encodeRgb } from '../../robot/sim/render/encode.js';
import { Rasterizer } from '../../robot/sim/render/rasterizer.js';
import { renderCamera, type ArmView } from '../../robot/sim/render/scene-primitives.js';
import { homeArms, startStates } from '../../robot/sim/render/scene-start.js';
import type { SceneCamera, SceneDescription } from '../../robot/sim/scene/types.js';
import { percentile } from './percentile.js';

export interface RenderBenchOptions {
  frames: number;
  /** Untimed frames first, so the JIT has compiled the rasteriser. */
  warmup: number;
  /** Render every camera at this size (intrinsics scaled with it); null: each camera's own. */
  resolution: { width: number; height: number } | null;
  supersample: boolean;
  /** Monotonic clock in ms. */
  clock: () => number;
  /** This process's CPU time in ms: rendering is synchronous, so a frame's CPU time excludes time spent waiting for a core. */
  cpuClock: () => number;
}

export interface RenderBenchRow {
  scene: string;
  camera: string;
  width: number;
  height: number;
  encoding: 'jpeg' | 'png';
  depth: boolean;
  frames: number;
  render_p50_ms: number;
  render_p99_ms: number;
  render_cpu_p50_ms: number;
  encode_p50_ms: number;
  encode_p99_ms: number;
  /** Depth PNG encoding, when the camera renders depth. */
  depth_encode_p50_ms: number | null;
  mean_bytes: number;
}

/** The camera with its image resized to `resolution`, intrinsics scaled to keep the field of view. */
export function resized(camera: SceneCamera, resolution: RenderBenchOptions['resolution']): SceneCamera {
  if (!resolution) return camera;
  const sx = resolution.width / camera.width,
    sy = resolution.height / camera.height;
  return { ...camera, ...resolution, fx: camera.fx * sx, fy: camera.fy * sy, cx: camera.cx * sx, cy: camera.cy * sy };
}

/** Joint offsets of frame k: every joint sways by up to 0.2 rad, each at its own pace. */
function sway(arms: ArmView[], home: number[][], k: number): void {
  arms.forEach((a, i) => {
    a.q = home[i].map((q, j) => q + 0.2 * Math.sin(0.1 * k + j));
  });
}

const round = (x: number): number => Math.round(x * 1000) / 1000;

export async function runRenderBench(
  scene: SceneDescription,
  sceneCamera: SceneCamera,
  o: RenderBenchOptions,
): Promise<RenderBenchRow> {
  const camera = resized(sceneCamera, o.resolution);
  const arms = homeArms(scene);
  const home = arms.map((a) => Array.from(a.q));
  const objects = startStates(scene);
  const rasterizer = new Rasterizer();
  const render = new Float64Array(o.frames),
    renderCpu = new Float64Array(o.frames),
    encode = new Float64Array(o.frames),
    depthEncode = new Float64Array(o.frames);
  let bytes = 0;
  for (let k = -o.warmup; k < o.frames; k++) {
    sway(arms, home, k);
    const c0 = o.cpuClock();
    const t0 = o.clock();
    const frame = renderCamera(rasterizer, scene, camera, objects, arms, { supersample: o.supersample });
    const t1 = o.clock();
    const c1 = o.cpuClock();
    const image = await encodeRgb(frame, { format: camera.encoding });
    const t2 = o.clock();
    if (camera.depth) await encodeDepth(frame);
    const t3 = o.clock();
    if (k < 0) continue;
    render[k] = t1 - t0;
    renderCpu[k] = c1 - c0;
    encode[k] = t2 - t1;
    depthEncode[k] = t3 - t2;
    bytes += image.length;
  }
  for (const a of [render, renderCpu, encode, depthEncode]) a.sort();
  return {
    scene: scene.name,
    camera: camera.name,
    width: camera.width,
    height: camera.height,
    encoding: camera.encoding,
    depth: camera.depth,
    frames: o.frames,
    render_p50_ms: round(percentile(render, 50)),
    render_p99_ms: round(percentile(render, 99)),
    render_cpu_p50_ms: round(percentile(renderCpu, 50)),
    encode_p50_ms: round(percentile(encode, 50)),
    encode_p99_ms: round(percentile(encode, 99)),
    depth_encode_p50_ms: camera.depth ? round(percentile(depthEncode, 50)) : null,
    mean_bytes: Math.round(bytes / o.frames),
  };
}
