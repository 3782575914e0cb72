// Simulated controllers the daemon runs itself (`brainstem sim` children), so a fresh install
// shows motion end to end: one per served robot marked `sim: true`, connected over that
// robot's transport (the daemon's broker with the robot's own credentials, or /controller with the token).
// A child that exits is restarted, after 1 s and twice as long after each exit within 10 s of
// its start (up to 30 s); each stops when the daemon does, and by itself when the daemon dies
// (its stdin closes).
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { repoRoot } from '../util/repo-root.js';
import type { Logger } from '../log.js';
import { Service } from '../service.js';
import type { ServedRobot } from './config.js';

const RESTART_MS = 1000;
const MAX_RESTART_MS = 30_000;
/** A child that ran this long was healthy: its next restart waits RESTART_MS again. */
const HEALTHY_MS = 10_000;
const STOP_WAIT_MS = 3000;

export interface SimChildrenDeps {
  robots: ServedRobot[];
  base: string;
  configsDir: string;
  /** Broker URL with the credentials of robot `id`, read at start (the embedded broker's port is known then). */
  brokerUrl: (id: string) => string;
  /** ws://host:port/controller and the API token. */
  controllerUrl: () => string;
  token: string;
  /** mqtt.tls: CA, client certificate and key files for an mqtts:// broker (empty = unset). */
  tls: { ca: string; cert: string; key: string };
  log: Logger;
  /** The CLI entry to run (default dist/daemon/main.js of this package). */
  main?: string;
}

interface Child {
  robot: ServedRobot;
  proc: ChildProcess | null;
  restart: NodeJS.Timeout | null;
  starts: number;
  startedAt: number;
  delay: number;
  lastLine: string;
}

export class SimChildren extends Service {
  readonly name = 'robot-sims';
  private children: Child[] = [];
  private stopping = false;

  constructor(private readonly deps: SimChildrenDeps) {
    super();
  }

  protected override describe() {
    const running = Object.fromEntries(
      this.children.filter((c) => c.proc && c.proc.exitCode === null).map((c) => [c.robot.id, c.proc!.pid]),
    );
    const down = this.children.filter((c) => !(c.robot.id in running));
    const detail = {
      pids: running,
      restarts: Object.fromEntries(this.children.map((c) => [c.robot.id, c.starts - 1])),
    };
    if (!down.length) return { detail };
    return {
      degraded: `simulated controller ${down.map((c) => `${c.robot.id} exited (${c.lastLine || 'no output'})`).join('; ')}; restarting`,
      detail,
    };
  }

  protected async onStart(): Promise<void> {
    this.stopping = false;
    this.children = this.deps.robots.map((robot) => ({
      robot,
      proc: null,
      restart: null,
      starts: 0,
      startedAt: 0,
      delay: RESTART_MS,
      lastLine: '',
    }));
    for (const c of this.children) this.launch(c);
  }

  protected async onStop(): Promise<void> {
    this.stopping = true;
    await Promise.all(this.children.map((c) => this.end(c)));
  }

  private launch(c: Child): void {
    const { robot } = c;
    const args = ['sim', '--robot', robot.robot, '--id', robot.id, '--exit-on-stdin-close', ...robot.sim_args];
    const env: NodeJS.ProcessEnv = { ...process.env };
    if (this.deps.configsDir) args[2] = join(this.deps.configsDir, `${robot.robot}.yaml`);
    if (robot.transport === 'ws') {
      args.push('--ws', this.deps.controllerUrl());
      env.BRAINSTEM_TOKEN = this.deps.token;
    } else {
      args.push('--base', this.deps.base);
      for (const [k, file] of Object.entries(this.deps.tls)) if (file) args.push(`--${k}`, file);
      env.BRAINSTEM_SIM_BROKER = this.deps.brokerUrl(robot.id);
    }
    const proc = spawn(process.execPath, [this.deps.main ?? join(repoRoot, 'dist', 'daemon', 'main.js'), ...args], {
      env,
      stdio: ['pipe', 'ignore', 'pipe'],
    });
    c.proc = proc;
    c.starts++;
    c.startedAt = Date.now();
    const log = this.deps.log.child({ robot: robot.id, pid: proc.pid });
    let buffered = '';
    proc.stderr!.on('data', (d: Buffer) => {
      buffered += d.toString();
      const lines = buffered.split('\n');
      buffered = lines.pop()!;
      for (const line of lines) {
        if (!line.trim()) continue;
        c.lastLine = line.replace(/^brainstem sim \[[^\]]*\] /, '');
        log.info(c.lastLine);
      }
    });
    proc.on('error', (err) => log.error({ err: err.message }, 'could not start the simulated controller'));
    proc.once('exit', (code, signal) => {
      if (c.proc === proc) c.proc = null;
      if (this.stopping) return;
      if (Date.now() - c.startedAt >= HEALTHY_MS) c.delay = RESTART_MS;
      const wait = c.delay;
      c.delay = Math.min(c.delay * 2, MAX_RESTART_MS);
      log.warn({ code, signal, last: c.lastLine }, `simulated controller exited; restarting in ${wait} ms`);
      c.restart = setTimeout(() => {
        c.restart = null;
        this.launch(c);
      }, wait);
    });
    log.info({ robot: robot.robot, transport: robot.transport }, 'simulated controller started');
  }

  /** SIGTERM, then SIGKILL for a child still running after STOP_WAIT_MS (hung); logs how it ended. */
  private async end(c: Child): Promise<void> {
    if (c.restart) clearTimeout(c.restart);
    const proc = c.proc;
    if (!proc || proc.exitCode !== null || proc.signalCode !== null) return;
    const exited = new Promise<[number | null, NodeJS.Signals | null]>((resolve) =>
      proc.once('exit', (code, signal) => resolve([code, signal])),
    );
    const began = performance.now();
    let killed = false;
    proc.kill('SIGTERM');
    const timer = setTimeout(() => {
      killed = true;
      proc.kill('SIGKILL');
    }, STOP_WAIT_MS);
    const [code, signal] = await exited;
    clearTimeout(timer);
    const stop_ms = Math.round(performance.now() - began);
    this.deps.log[killed ? 'warn' : 'info'](
      { robot: c.robot.id, pid: proc.pid, code, signal, killed, stop_ms },
      'simulated controller stopped',
    );
  }
}
