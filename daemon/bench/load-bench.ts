// `brainstem bench load`: a real daemon (embedded broker, API) in this process while child
// processes flood its WebSocket API with valid and invalid traffic (some clients never reading)
// and another records the daemon heartbeat's arrivals over MQTT. Reports heartbeat gaps against
// the period, API latency of the valid calls and the daemon's RSS growth. The flood processes run
// at a lower priority (nice FLOOD_NICE): on a small machine they stand for clients on other
// machines, and must not take the CPU the daemon and its controller need to be measured.
import { fork, type ChildProcess } from 'node:child_process';
import { availableParallelism, loadavg, setPriority } from 'node:os';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { createDaemon } from '../compose.js';
import { loadConfig } from '../config/load.js';
import { Logs } from '../log.js';
import { daemonTopics } from '../../robot/link/protocol.js';
import type { LoadClientReport, LoadClientSetup } from './load-bench-client.js';
import { collectGarbage, memorySample, peakOf } from './memory-sample.js';
import { percentile } from './percentile.js';

export interface LoadBenchOptions {
  dataDir: string;
  clients: number;
  seconds: number;
  /** Client processes the WebSocket clients are spread over. */
  processes: number;
  /** Every n-th client never reads its replies (0: none). */
  nonReaderEvery: number;
  /** MQTT connections flooding the broker as an observer identity (0: none). */
  mqttClients: number;
}

/** Niceness of the flood processes (the observer, motion client, daemon and controller keep theirs). */
export const FLOOD_NICE = 10;

const r3 = (x: number) => Math.round(x * 1000) / 1000;

function spawnClient(setup: LoadClientSetup): { child: ChildProcess; report: Promise<LoadClientReport> } {
  const child = fork(new URL('./load-bench-client.js', import.meta.url), [JSON.stringify(setup)], {
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  });
  const report = new Promise<LoadClientReport>((resolve, reject) => {
    child.on('message', (m: LoadClientReport | { ready: true }) => {
      if (!('ready' in m)) resolve(m);
    });
    child.once('exit', (code) =>
      reject(new Error(`bench client (${setup.role}) exited with ${code} before reporting`)),
    );
  });
  return { child, report };
}

const summary = (values: number[]) => {
  const s = [...values].sort((a, b) => a - b);
  return { p50: r3(percentile(s, 50)), p99: r3(percentile(s, 99)), max: r3(s.at(-1) ?? 0) };
};

export async function runLoadBench(o: LoadBenchOptions): Promise<Record<string, unknown>> {
  const config = loadConfig({
    env: {},
    overrides: [
      {
        data_dir: o.dataDir,
        server: { port: 0 },
        mqtt: { embedded: { port: 0 }, observers: ['bench'] },
        logging: { level: 'silent' },
        robots: { simulate: true, serve: [{ id: 'arm', robot: 'yam', sim: true }] },
      },
    ],
  });
  // What else ran meanwhile: the numbers mean little on a machine that was busy before the bench.
  const loadBefore = loadavg()[0]!;
  const parts = createDaemon(config, { logs: new Logs(config.logging) });
  await parts.daemon.start();
  const children: ChildProcess[] = [];
  try {
    const period = config.robots.heartbeat.period_ms;
    const observer = spawnClient({
      role: 'observer',
      seconds: o.seconds + 1,
      mqtt: {
        url: parts.broker!.url(),
        username: parts.mqttIdentities[0]!.username,
        password: parts.mqttIdentities[0]!.password,
        topic: daemonTopics(config.mqtt.base).heartbeat,
      },
    });
    children.push(observer.child);
    await new Promise((resolve) => observer.child.once('message', resolve));
    const motion = spawnClient({
      role: 'motion',
      seconds: o.seconds,
      motion: { url: `${parts.api.url('ws')}/ws`, token: parts.token.value, robot: 'arm' },
    });
    children.push(motion.child);
    // The flood starts once the simulated arm answers.
    await new Promise((resolve) => motion.child.once('message', resolve));
    const mem0 = memorySample();
    let memPeak = mem0;
    const sampler = setInterval(() => {
      memPeak = peakOf(memPeak, memorySample());
    }, 100);
    // The daemon loop's own blocking, told apart from the CPU being taken by other processes.
    const delay = monitorEventLoopDelay({ resolution: 1 });
    delay.enable();
    const floods = Array.from({ length: o.processes }, (_, p) => {
      const clients = Math.floor(o.clients / o.processes) + (p < o.clients % o.processes ? 1 : 0);
      return spawnClient({
        role: 'flood',
        seconds: o.seconds,
        ws: {
          url: `${parts.api.url('ws')}/ws`,
          token: parts.token.value,
          clients,
          nonReaderEvery: o.nonReaderEvery,
          maxBatch: config.server.max_batch_calls,
          maxDepth: config.server.max_json_depth,
        },
      });
    });
    const observerId = parts.mqttIdentities.find((i) => i.role.kind === 'observer')!;
    const mqtt =
      o.mqttClients > 0
        ? spawnClient({
            role: 'mqtt',
            seconds: o.seconds,
            mqttFlood: {
              url: parts.broker!.url(),
              username: observerId.username,
              password: observerId.password,
              base: config.mqtt.base,
              clients: o.mqttClients,
            },
          })
        : undefined;
    children.push(...floods.map((f) => f.child), ...(mqtt ? [mqtt.child] : []));
    const niced = [...floods, ...(mqtt ? [mqtt] : [])].map((f) => lowerPriority(f.child)).every(Boolean);
    const reports = await Promise.all(floods.map((f) => f.report));
    const mqttReport = (await mqtt?.report)?.mqtt;
    const motionReport = await motion.report;
    const motions = motionReport.motions ?? {};
    clearInterval(sampler);
    delay.disable();
    const ms = (ns: number) => r3(ns / 1e6);
    const mem1 = memorySample();
    // The flood's clients are gone; what a full collection leaves is what the daemon retains.
    await new Promise((resolve) => setTimeout(resolve, 500));
    collectGarbage();
    const memGc = memorySample();
    const beats = (await observer.report).heartbeatTimesMs ?? [];
    const gaps = beats.slice(1).map((t, i) => t - beats[i]!);
    const merge = (key: 'errors' | 'closes') => {
      const out: Record<string, number> = {};
      for (const r of reports) for (const [k, n] of Object.entries(r[key])) out[k] = (out[k] ?? 0) + n;
      return out;
    };
    const maxGap = Math.max(0, ...gaps);
    return {
      machine: {
        cpus: availableParallelism(),
        load_avg_1m_before: r3(loadBefore),
        load_avg_1m_after: r3(loadavg()[0]!),
      },
      clients: o.clients,
      flood_nice: niced ? FLOOD_NICE : 0,
      non_readers: o.nonReaderEvery > 0 ? Math.floor(o.clients / o.nonReaderEvery) : 0,
      seconds: o.seconds,
      heartbeat: {
        period_ms: period,
        received: beats.length,
        gap_ms: summary(gaps),
        gaps_over_2x_period: gaps.filter((g) => g > 2 * period).length,
      },
      api: {
        messages_sent: reports.reduce((n, r) => n + r.sent, 0),
        replies: reports.reduce((n, r) => n + r.replies, 0),
        valid_call_latency_ms: summary(reports.flatMap((r) => r.latenciesMs ?? [])),
        error_codes: merge('errors'),
        closed_by_daemon: merge('closes'),
      },
      mqtt: { clients: o.mqttClients, ...(mqttReport ?? {}) },
      motion: {
        move_to: motions,
        disturbed: Object.entries(motions).some(([k, n]) => k !== 'ok' && n > 0),
        disturbed_at_s: motionReport.disturbedAtS ?? [],
      },
      event_loop_delay_ms: { p50: ms(delay.percentile(50)), p99: ms(delay.percentile(99)), max: ms(delay.max) },
      rss_mib: { before: mem0.rss, peak: memPeak.rss, after: mem1.rss, growth: r3(memPeak.rss - mem0.rss) },
      memory_mib: { before: mem0, peak: memPeak, after: mem1, after_gc: memGc },
      target: { max_heartbeat_gap_ms: 2 * period, met: maxGap <= 2 * period },
    };
  } finally {
    for (const c of children) if (c.exitCode === null) c.kill();
    await parts.daemon.stop();
  }
}

/** Best effort: false when the platform refused, and the flood runs at normal priority (reported). */
function lowerPriority(child: ChildProcess): boolean {
  try {
    if (child.pid === undefined) return false;
    setPriority(child.pid, FLOOD_NICE);
    return true;
  } catch {
    return false;
  }
}
