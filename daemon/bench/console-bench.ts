// `brainstem bench console`: the console's bundle (bytes, raw and gzip, of the page's files and
// the vendored libraries) and, in headless Chromium against an in-process daemon serving a
// simulated yam, the first load (login → connected → the arm drawn) and the e-stop (Esc during
// a move → every arm reported at rest), each over fresh browser contexts (cold cache).
import { randomBytes } from 'node:crypto';
import { createDaemon, type DaemonParts } from '../compose.js';
import { loadConfig } from '../config/load.js';
import { loadAssets } from '../console/assets.js';
import { CHROMIUM_ARGS } from '../console/chromium.js';
import { Logs } from '../log.js';
import { percentile } from './percentile.js';

export interface ConsoleBenchOptions {
  dataDir: string;
  chromium: string;
  loads: number;
  stops: number;
}

/** The page's debug handles (docs/console.md) the bench reads. */
interface PageHandles {
  brainstemConsole?: { view: { pose(robot: string, arm: string): unknown } };
  brainstemEstop: { connected: boolean; presses: number; lastMs: number };
}

const r1 = (x: number) => Math.round(x * 10) / 10;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Bytes of what a first load fetches: the page's own files and the vendored libraries. */
export function bundleSizes(): Record<string, number> {
  const sum = { page_bytes: 0, page_gzip_bytes: 0, vendor_bytes: 0, vendor_gzip_bytes: 0 };
  for (const [path, a] of loadAssets()) {
    if (path.endsWith('/login.html')) continue;
    const vendor = path.startsWith('/console/vendor/');
    sum[vendor ? 'vendor_bytes' : 'page_bytes'] += a.body.length;
    sum[vendor ? 'vendor_gzip_bytes' : 'page_gzip_bytes'] += a.gzip().length;
  }
  return { ...sum, total_gzip_bytes: sum.page_gzip_bytes + sum.vendor_gzip_bytes };
}

async function until(probe: () => boolean, what: string, ms = 30_000): Promise<void> {
  const end = performance.now() + ms;
  while (!probe()) {
    if (performance.now() > end) throw new Error(`bench console: timed out waiting for ${what}`);
    await sleep(20);
  }
}

const stats = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return { p50: r1(percentile(s, 50)), min: r1(s[0]!), max: r1(s[s.length - 1]!), n: s.length };
};

export async function runConsoleBench(o: ConsoleBenchOptions): Promise<Record<string, unknown>> {
  let playwright: typeof import('playwright-core');
  try {
    playwright = await import('playwright-core');
  } catch {
    throw new Error('bench console needs playwright-core (a devDependency: npm install without --omit=dev)');
  }
  const token = randomBytes(16).toString('hex');
  const config = loadConfig({
    env: {},
    overrides: [
      {
        data_dir: o.dataDir,
        server: { port: 0, token },
        mqtt: { embedded: { port: 0 } },
        logging: { level: 'silent' },
        robots: { simulate: true, serve: [{ id: 'yam', robot: 'yam', sim: true }] },
      },
    ],
  });
  const parts: DaemonParts = createDaemon(config, { logs: new Logs(config.logging) });
  await parts.daemon.start();
  const browser = await playwright.chromium.launch({ executablePath: o.chromium, headless: true, args: CHROMIUM_ARGS });
  try {
    const yam = parts.robots.robot('yam')!;
    await until(() => yam.session.problem(parts.robots.now()) === null, 'the simulated yam to be ready');
    const base = parts.api.url();
    const open = async () => {
      const context = await browser.newContext();
      const page = await context.newPage();
      await page.goto(`${base}/`);
      await page.fill('#token', token);
      return { context, page };
    };
    const connected: number[] = [];
    const drawn: number[] = [];
    for (let i = 0; i < o.loads; i++) {
      const { context, page } = await open();
      const t0 = performance.now();
      await page.click('button[type=submit]');
      await page.waitForSelector('#conn[data-state=open]');
      connected.push(performance.now() - t0);
      await page.waitForFunction(
        () => (globalThis as unknown as PageHandles).brainstemConsole?.view.pose('yam', 'arm') != null,
      );
      drawn.push(performance.now() - t0);
      await context.close();
    }
    const stop: number[] = [];
    const { context, page } = await open();
    await page.click('button[type=submit]');
    await page.waitForFunction(() => (globalThis as unknown as PageHandles).brainstemEstop?.connected === true);
    const tcp = yam.model.tcpPose('arm', yam.model.setup.arms[0]!.robot.home);
    const moveTo = (dz: number) =>
      yam.executor.execute({
        name: 'move_to',
        arguments: { target: { pose_xyzquat: [tcp[0]!, tcp[1]!, tcp[2]! + dz, ...tcp.slice(3)] } },
      });
    for (let i = 0; i < o.stops; i++) {
      const move = moveTo(-0.1);
      await until(() => yam.executor.busyArms().includes('arm'), 'the arm to move');
      await sleep(150);
      await page.keyboard.press('Escape');
      await page.waitForFunction((n) => (globalThis as unknown as PageHandles).brainstemEstop.presses === n, i + 1);
      await page.waitForSelector('#estop-status[data-phase=rest]');
      stop.push(await page.evaluate(() => (globalThis as unknown as PageHandles).brainstemEstop.lastMs as number));
      await move;
      await moveTo(0); // back to the start for the next round
    }
    await context.close();
    return {
      bundle: bundleSizes(),
      first_load_ms: { login_to_connected: stats(connected), login_to_arm_drawn: stats(drawn) },
      estop_ms: { press_to_rest_confirmed: stats(stop) },
    };
  } finally {
    await browser.close();
    await parts.daemon.stop();
  }
}
