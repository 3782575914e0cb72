// Trajectory plots (uPlot): for the chosen arm, per joint, the last plan's position and velocity
// against the measured ones (robots.state, kept for WINDOW_S) and the joint's limits, on the
// controller's clock; the info line gives each joint's largest tracking error over the plan.
import uPlot from '/console/vendor/uPlot.esm.js';

const WINDOW_S = 30;
const COLORS = { plan: '#40c0ff', measured: '#ffb040', limit: '#e04040' };

/** Planned q (or dq) at time t by linear interpolation, null outside the plan. */
function planAt(points, start, t, key, j) {
  const x = t - start;
  if (!points.length || x < 0 || x > points[points.length - 1].t) return null;
  let lo = 0;
  let hi = points.length - 1;
  while (hi - lo > 1) {
    const mid = (lo + hi) >> 1;
    if (points[mid].t <= x) lo = mid;
    else hi = mid;
  }
  const a = points[lo];
  const b = points[hi];
  const va = a[key]?.[j];
  const vb = b[key]?.[j];
  if (va === undefined || vb === undefined) return null;
  return b.t === a.t ? va : va + ((vb - va) * (x - a.t)) / (b.t - a.t);
}

export class Plots {
  constructor(rpc, box, robotSelect, armSelect, info) {
    Object.assign(this, { rpc, box, robotSelect, armSelect, info });
    this.descs = new Map();
    this.samples = new Map();
    this.plans = new Map();
    this.charts = [];
    this.key = '';
    robotSelect.addEventListener('change', () => this.fillArms());
    armSelect.addEventListener('change', () => this.redraw(true));
    setInterval(() => this.redraw(false), 500);
  }

  addRobot(id, desc) {
    this.descs.set(id, desc);
    if (![...this.robotSelect.options].some((o) => o.value === id)) this.robotSelect.add(new Option(id, id));
    if (this.robotSelect.options.length === 1) this.fillArms();
  }

  fillArms() {
    const desc = this.descs.get(this.robotSelect.value);
    this.armSelect.replaceChildren(...(desc?.arms ?? []).map((a) => new Option(a.name, a.name)));
    this.redraw(true);
  }

  /** A robots.state notification: measured q and dq per arm at controller_time. */
  sample(s) {
    if (!s.arms || s.controller_time === null) return;
    for (const [arm, a] of Object.entries(s.arms)) {
      const key = `${s.robot}/${arm}`;
      const list = this.samples.get(key) ?? [];
      if (list.length && list[list.length - 1].t >= s.controller_time) continue;
      list.push({ t: s.controller_time, q: a.q, dq: a.dq });
      while (list.length && list[0].t < s.controller_time - WINDOW_S) list.shift();
      this.samples.set(key, list);
    }
  }

  setPlans(robot, p) {
    for (const [arm, plan] of Object.entries(p.plans)) this.plans.set(`${robot}/${arm}`, plan);
  }

  /** The series of joint j: [x, plan q, measured q, lower, upper] and [x, plan dq, measured dq, −v, +v]. */
  data(key, joint, j) {
    const measured = this.samples.get(key) ?? [];
    const plan = this.plans.get(key);
    const now = measured.length ? measured[measured.length - 1].t : 0;
    const planTimes = plan ? plan.points.map((p) => plan.start_time + p.t).filter((t) => t >= now - WINDOW_S) : [];
    const xs = [...new Set([...measured.map((s) => s.t), ...planTimes])].sort((a, b) => a - b);
    const byT = new Map(measured.map((s) => [s.t, s]));
    const planned = (t, k) => (plan ? planAt(plan.points, plan.start_time, t, k, j) : null);
    const lim = joint.limits;
    // Seconds relative to the newest measurement: controller clocks count from their own start.
    const rel = xs.map((t) => t - now);
    const pos = [
      rel,
      xs.map((t) => planned(t, 'q')),
      xs.map((t) => byT.get(t)?.q[j] ?? null),
      xs.map(() => lim.lower),
      xs.map(() => lim.upper),
    ];
    const vel = [
      rel,
      xs.map((t) => planned(t, 'dq')),
      xs.map((t) => byT.get(t)?.dq[j] ?? null),
      xs.map(() => -lim.velocity),
      xs.map(() => lim.velocity),
    ];
    let err = 0;
    for (const s of measured) {
      const p = planned(s.t, 'q');
      if (p !== null) err = Math.max(err, Math.abs(p - s.q[j]));
    }
    return { pos, vel, err };
  }

  chart(title, unit) {
    const series = [
      {},
      { label: 'plan', stroke: COLORS.plan, width: 2, spanGaps: true },
      { label: 'measured', stroke: COLORS.measured, width: 1.5, spanGaps: true },
      { label: 'limit', stroke: COLORS.limit, dash: [4, 4] },
      { label: 'limit', stroke: COLORS.limit, dash: [4, 4] },
    ];
    const opts = {
      title,
      width: 300,
      height: 150,
      series,
      scales: { x: { time: false } },
      axes: [
        { stroke: '#9ab', label: 's (0 = latest state)' },
        { stroke: '#9ab', label: unit, size: 50 },
      ],
      legend: { show: false },
    };
    const div = document.createElement('div');
    div.className = 'plot';
    this.box.append(div);
    return new uPlot(opts, [[], [], [], [], []], div);
  }

  redraw(rebuild) {
    const robot = this.robotSelect.value;
    const armName = this.armSelect.value;
    const arm = this.descs.get(robot)?.arms.find((a) => a.name === armName);
    if (!arm) return;
    const key = `${robot}/${armName}`;
    if (rebuild || this.key !== key) {
      for (const c of this.charts) {
        c.pos.destroy();
        c.vel.destroy();
      }
      this.box.replaceChildren();
      this.charts = arm.joints.map((j) => ({
        pos: this.chart(`${j.name} position`, 'rad'),
        vel: this.chart(`${j.name} velocity`, 'rad/s'),
      }));
      this.key = key;
    }
    const errors = [];
    arm.joints.forEach((joint, j) => {
      const { pos, vel, err } = this.data(key, joint, j);
      this.charts[j].pos.setData(pos);
      this.charts[j].vel.setData(vel);
      errors.push(`${joint.name} ${err.toFixed(4)}`);
    });
    const plan = this.plans.get(key);
    this.info.textContent = plan
      ? `last plan ${plan.id}: ${plan.duration_s.toFixed(2)} s, ${plan.points.length} points; largest tracking error (rad): ${errors.join(', ')}`
      : 'no plan sent yet';
    this.rendered = (this.rendered ?? 0) + 1;
  }
}
