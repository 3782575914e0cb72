// Synthetic joint paths for the path-timing tests: smooth random curves sampled in progress s.
import type { Prng } from '../../../../robot/common/prng.js';
import type { JointPath } from '../../../../robot/motion/timing/path-scaling.js';
import type { RateLimits } from '../../../../robot/motion/timing/joint-move.js';

/** q_j(s) = c_j + Σ amplitude·sin(ω s + φ) over `samples` progress points (uniform or not). */
export function randomPath(r: Prng, joints: number, samples: number, uniform = true): JointPath {
  const s = new Float64Array(samples);
  if (uniform) for (let k = 0; k < samples; k++) s[k] = k / (samples - 1);
  else {
    // Arc-length-like progress: strictly increasing, uneven steps.
    let acc = 0;
    const steps = Array.from({ length: samples - 1 }, () => 0.2 + r.next());
    const total = steps.reduce((a, b) => a + b, 0);
    for (let k = 1; k < samples; k++) s[k] = (acc += steps[k - 1]) / total;
    s[samples - 1] = 1;
  }
  const q = new Float64Array(samples * joints);
  for (let j = 0; j < joints; j++) {
    const c = r.uniform(-1, 1),
      amp = r.uniform(0, 1.5),
      w = r.uniform(0.5, 6),
      ph = r.uniform(0, 6.3),
      lin = r.uniform(-1, 1);
    for (let k = 0; k < samples; k++) q[k * joints + j] = c + lin * s[k] + amp * Math.sin(w * s[k] + ph);
  }
  return { joints, samples, q, s: uniform ? undefined : s, length: r.uniform(0, 0.5), rotation: r.uniform(0, 1.5) };
}

export function randomLimits(r: Prng, joints: number): RateLimits[] {
  return Array.from({ length: joints }, () => ({
    velocity: r.uniform(0.3, 3),
    acceleration: r.uniform(1, 10),
    jerk: r.uniform(5, 100),
  }));
}
