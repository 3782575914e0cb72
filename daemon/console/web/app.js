// The console's main module: one JSON-RPC connection feeding the panels. The e-stop (estop.js)
// does not depend on anything here. `globalThis.brainstemConsole` exposes the panels' state.
import { Cameras } from './cameras.js';
import { Episodes } from './episodes.js';
import { Models } from './models.js';
import { Plots } from './plots.js';
import { every, Rpc } from './rpc.js';
import { View3d } from './view3d.js';

const $ = (id) => document.getElementById(id);
const STATE_HZ_MAX = 60;

function showError(err) {
  const box = $('page-error');
  box.hidden = false;
  box.textContent = String(err?.message ?? err);
}
addEventListener('error', (e) => showError(e.message));
addEventListener('unhandledrejection', (e) => showError(e.reason));

const conn = $('conn');
// While the connection is down, what the panels show is the last known state: said on each.
let lostAt = null;
const rpc = new Rpc((state) => {
  conn.dataset.state = state;
  conn.textContent = { open: 'connected', connecting: 'connecting…', closed: 'disconnected' }[state];
  if (state === 'open') lostAt = null;
  else if (lostAt === null && state === 'closed') {
    lostAt = new Date().toLocaleTimeString();
    for (const r of robots.values()) robotCard(r.summary);
    cameras.disconnected(lostAt);
  }
});
const view = new View3d($('view3d'));
const cameras = new Cameras($('camera-grid'));
const plots = new Plots(rpc, $('plots'), $('plot-robot'), $('plot-arm'), $('plot-info'), $('plot-quantity'));
const episodes = new Episodes(rpc, showError);
const models = new Models(rpc, $('models'), $('system-sparks'));
const robots = new Map();

function robotCard(r) {
  let card = $(`robot-${r.id}`);
  if (!card) {
    card = document.createElement('div');
    card.id = `robot-${r.id}`;
    card.className = 'robot-card';
    $('robot-list').append(card);
  }
  const arms = r.arms.map((a) => a.name).join(', ');
  const problem = r.problem ? ` — ${r.problem.code}: ${r.problem.message}` : '';
  card.dataset.ready = String(r.ready && lostAt === null);
  card.dataset.stale = String(lostAt !== null);
  const lost = lostAt === null ? '' : `disconnected from the daemon at ${lostAt}; last known: `;
  card.textContent = `${lost}${r.id} (${r.robot}, ${r.transport}) · arms: ${arms} · ${r.ready ? 'ready' : 'not ready'}${problem}${r.busy.length ? ` · moving: ${r.busy.join(', ')}` : ''}`;
}

/** Reads the robot's description; the view is rebuilt only when it differs from the one drawn. */
async function describe(id) {
  const d = await rpc.call('robots.describe', { robot: id });
  const drawn = view.robots.get(id)?.desc;
  if (!drawn || JSON.stringify(drawn) !== JSON.stringify(d)) view.addRobot(d);
  return d;
}

async function watchRobot(r) {
  robots.set(r.id, { summary: r, sceneName: null });
  robots.get(r.id).sceneName = (await describe(r.id)).scene?.name ?? null;
  const rate = Math.min(STATE_HZ_MAX, r.controller?.state_rate ?? 30);
  await rpc.call('robots.state', { robot: r.id, rate_hz: Math.max(1, Math.round(rate)) });
  plots.addRobot(r.id, view.robots.get(r.id).desc);
}

rpc.on('robots.state', (s) => {
  view.setState(s.robot, s.arms);
  plots.sample(s);
});

async function refreshRobots() {
  const { robots: list } = await rpc.call('robots.list');
  episodes.setRobots(list.map((r) => r.id));
  for (const r of list) {
    robotCard(r);
    if (!robots.has(r.id)) await watchRobot(r);
    robots.get(r.id).summary = r;
  }
}

async function refreshScenes() {
  for (const id of robots.keys()) {
    const { scene } = await rpc.call('sim.scene', { robot: id });
    if (!scene) continue;
    // The layout comes with robots.describe: read again when the simulator announces another
    // scene (one not shipped has no layout, and stays undrawn rather than re-read every poll).
    const r = robots.get(id);
    if (scene.scene !== r.sceneName) {
      await describe(id);
      r.sceneName = scene.scene;
    }
    view.setScene(id, scene);
  }
}

async function refreshPlans() {
  for (const id of robots.keys()) {
    const p = await rpc.call('robots.plans', { robot: id });
    view.setPlans(id, p.plans);
    plots.setPlans(id, p);
  }
}

async function refreshCameras() {
  for (const id of robots.keys()) view.setCameras(id, await cameras.refresh(rpc, id));
}

let timers = [];
rpc.onOpen(() => {
  // Errors of the time the connection was down are over.
  $('page-error').hidden = true;
  for (const t of timers) clearInterval(t);
  robots.clear();
  timers = [
    every(2000, refreshRobots, showError),
    every(500, refreshScenes, showError),
    every(700, refreshPlans, showError),
    every(500, refreshCameras, showError),
    // Episodes other clients start appear in the list (and stream here) within seconds.
    every(3000, () => episodes.refreshList(), showError),
  ];
  episodes.start();
  models.start();
});
rpc.connect();

globalThis.brainstemConsole = { rpc, view, cameras, plots, episodes, models, robots };
