// Trajectory plots (uPlot): for the chosen arm and quantity (position, velocity, acceleration,
// jerk or tracking error), one chart per joint of the last plan against the measured values
// (robots.state, kept for WINDOW_S) and the joint's limits, on the controller's clock. The
// info line gives each joint's largest tracking error and the settle time after the plan. A
// controller clock that goes back (a restarted controller) starts the arm's series afresh.
import uPlot from '/console/vendor/uPlot.esm.js';

const WINDOW_S = 30;
/** |dq| below which every joint counts as at rest when the settle time is measured (rad/s). */
const REST_RAD_S = 0.01;
const COLORS = { plan: '#40c0ff', measured: '#ffb040', limit: '#e04040' };
const QUANTITIES = {
  position: { key: 'q', unit: 'rad', limit: (l) => [l.lower, l.upper] },
  velocity: { key: 'dq', unit: 'rad/s', limit: (l) => [-l.velocity, l.velocity] },
  acceleration: { key: 'ddq', unit: 'rad/s²', limit: (l) => [-l.acceleration, l.acceleration] },
  jerk: { key: 'jerk', unit: 'rad/s³', limit: (l) => [-l.jerk, l.jerk] },
  error: { key: 'q', unit: 'rad (plan − measured)', limit: () => [null, null] },
};

/** Adds the finite-difference derivative of `from` as `to` to each sample (null at the first). */
function differentiate(list, from, to) {
  for (let i = 0; i < list.length; i++) {
    const a = list[i - 1];
    const b = list[i];
    if (b[to] !== undefined) continue;
    b[to] = a && b.t > a.t && a[from] && b[from] ? b[from].map((v, j) => (v - a[from][j]) / (b.t - a.t)) : null;
  }
}

/** The plan's `key` of joint j at controller time t by linear interpolation, null outside it. */
function planAt(plan, t, key, j) {
  const pts = plan.points;
  const x = t - plan.start_time;
  if (!pts.length || x < 0 || x > pts[pts.length - 1].t) return null;
  let lo = 0;
  let hi = pts.length - 1;
  while (hi - lo > 1) {
    const mid = (lo + hi) >> 1;
    if (pts[mid].t <= x) lo = mid;
    else hi = mid;
  }
  const va = pts[lo][key]?.[j];
  const vb = pts[hi][key]?.[j];
  if (va == null || vb == null) return null;
  return pts[hi].t === pts[lo].t ? va : va + ((vb - va) * (x - pts[lo].t)) / (pts[hi].t - pts[lo].t);
}

export class Plots {
  constructor(rpc, box, robotSelect, armSelect, info, quantitySelect) {
    Object.assign(this, { rpc, box, robotSelect, armSelect, info, quantitySelect });
    this.descs = new Map();
    this.samples = new Map();
    this.plans = new Map();
    /** Per arm: how many times its controller clock went back, and the last time it did. */
    this.clocks = new Map();
    this.restarts = new Map();
    this.charts = [];
    this.note = document.createElement('p');
    this.note.className = 'plot-note';
    this.note.hidden = true;
    box.before(this.note);
    this.key = '';
    robotSelect.addEventListener('change', () => this.fillArms());
    armSelect.addEventListener('change', () => this.redraw(true));
    quantitySelect.addEventListener('change', () => this.redraw(true));
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
      const last = list[list.length - 1];
      if (last?.t === s.controller_time) continue;
      if (last && s.controller_time < last.t) {
        // A restarted controller counts from 0 again: what came before is on another clock.
        list.length = 0;
        this.clocks.set(key, (this.clocks.get(key) ?? 0) + 1);
        this.restarts.set(key, { at: new Date().toLocaleTimeString(), from: last.t, to: s.controller_time });
      }
      list.push({ t: s.controller_time, q: a.q, dq: a.dq });
      while (list.length && list[0].t < s.controller_time - WINDOW_S) list.shift();
      this.samples.set(key, list);
    }
  }

  setPlans(robot, p) {
    for (const [arm, plan] of Object.entries(p.plans)) {
      const key = `${robot}/${arm}`;
      if (this.plans.get(key)?.id === plan.id) continue;
      differentiate(plan.points, 'ddq', 'jerk');
      this.plans.set(key, { ...plan, clock: this.clocks.get(key) ?? 0 });
    }
  }

  /** The arm's last plan if it is timed on the controller's present clock (not one before a restart). */
  plan(key) {
    const plan = this.plans.get(key);
    return plan && plan.clock === (this.clocks.get(key) ?? 0) ? plan : null;
  }

  /** Joint j's series for the quantity: [x, plan, measured, lower limit, upper limit]. */
  data(key, joint, j, quantity) {
    const measured = this.samples.get(key) ?? [];
    differentiate(measured, 'dq', 'ddq');
    differentiate(measured, 'ddq', 'jerk');
    const plan = this.plan(key);
    const now = measured.length ? measured[measured.length - 1].t : 0;
    const planTimes = plan ? plan.points.map((p) => plan.start_time + p.t).filter((t) => t >= now - WINDOW_S) : [];
    const q = QUANTITIES[quantity];
    const planned = (t) => (plan ? planAt(plan, t, q.key, j) : null);
    let xs;
    let planSeries;
    let measuredSeries;
    if (quantity === 'error') {
      xs = measured.map((s) => s.t);
      planSeries = xs.map(() => null);
      measuredSeries = measured.map((s) => {
        const p = planned(s.t);
        return p === null ? null : p - s.q[j];
      });
    } else {
      xs = [...new Set([...measured.map((s) => s.t), ...planTimes])].sort((a, b) => a - b);
      const byT = new Map(measured.map((s) => [s.t, s]));
      planSeries = xs.map((t) => planned(t));
      measuredSeries = xs.map((t) => byT.get(t)?.[q.key]?.[j] ?? null);
    }
    const [lower, upper] = q.limit(joint.limits);
    // Seconds relative to the newest measurement: controller clocks count from their own start.
    return [xs.map((t) => t - now), planSeries, measuredSeries, xs.map(() => lower), xs.map(() => upper)];
  }

  /** Each joint's largest |plan − measured| and the settle time after the plan's end, or null. */
  tracking(key, arm) {
    const measured = this.samples.get(key) ?? [];
    const plan = this.plan(key);
    if (!plan) return null;
    const errors = arm.joints.map((_, j) => {
      let err = 0;
      for (const s of measured) {
        const p = planAt(plan, s.t, 'q', j);
        if (p !== null) err = Math.max(err, Math.abs(p - s.q[j]));
      }
      return err;
    });
    const end = plan.start_time + plan.duration_s;
    const rest = measured.find((s) => s.t >= end && s.dq.every((v) => Math.abs(v) < REST_RAD_S));
    return { errors, settle: rest ? rest.t - end : null };
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
    const quantity = this.quantitySelect.value;
    const arm = this.descs.get(robot)?.arms.find((a) => a.name === armName);
    if (!arm) return;
    const key = `${robot}/${armName}`;
    if (rebuild || this.key !== `${key}/${quantity}`) {
      for (const c of this.charts) c.destroy();
      this.box.replaceChildren();
      this.charts = arm.joints.map((j) => this.chart(`${j.name} ${quantity}`, QUANTITIES[quantity].unit));
      this.key = `${key}/${quantity}`;
    }
    arm.joints.forEach((joint, j) => this.charts[j].setData(this.data(key, joint, j, quantity)));
    const plan = this.plan(key);
    const tr = this.tracking(key, arm);
    const restart = this.restarts.get(key);
    const measured = this.samples.get(key) ?? [];
    // Said until the new series fills the window.
    this.note.hidden = !restart || measured[measured.length - 1].t - measured[0].t > WINDOW_S;
    this.note.textContent = restart
      ? `controller clock restarted at ${restart.at} (went back from ${restart.from.toFixed(2)} s to ${restart.to.toFixed(2)} s): the series started afresh`
      : '';
    this.info.textContent = plan
      ? `last plan ${plan.id}: ${plan.duration_s.toFixed(2)} s, ${plan.points.length} points; settle ${tr.settle === null ? '–' : `${tr.settle.toFixed(2)} s`} after its end; largest tracking error (rad): ${arm.joints.map((jt, j) => `${jt.name} ${tr.errors[j].toFixed(4)}`).join(', ')}`
      : this.plans.has(key)
        ? 'no plan since the controller clock restarted'
        : 'no plan sent yet';
    this.rendered = (this.rendered ?? 0) + 1;
  }
}
