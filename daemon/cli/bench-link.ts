// `brainstem bench link`: the robot link's latency (tool call → trajectory published) and the
// daemon's event-loop lag under streaming state (daemon/bench/link-bench.ts). Prints JSON with
// --json (or when piped), else a short table.
import type { Command } from 'commander';
import { CliError } from './exit.js';
import { group, type CommandRegistrar } from './group.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { benchPlanToPublish, benchStateStreaming } from '../bench/link-bench.js';

interface Flags {
  calls: string;
  duration: string;
  subscribers: string;
  subscriberRate: string;
  stateRate: string;
  only?: string;
  json?: boolean;
}

function int(flag: string, v: string, lo: number, hi: number): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < lo || n > hi)
    throw new CliError(`${flag} must be an integer in [${lo}, ${hi}], got "${v}"`, 2);
  return n;
}

export const registerBenchLink: CommandRegistrar = (program: Command) => {
  group(program, 'bench')
    .command('link')
    .description(
      'robot link: tool call → trajectory published (10-pose chunk, 6 joints); event-loop lag with two arms streaming state',
    )
    .option('--calls <n>', 'timed tool calls (after 5 untimed)', '200')
    .option('--duration <s>', 'seconds of state streaming measured', '10')
    .option('--state-rate <hz>', 'state messages per second per arm', '500')
    .option('--subscribers <n>', 'WebSocket clients subscribed to both arms', '4')
    .option('--subscriber-rate <hz>', 'robots.state notifications per second per subscription', '50')
    .option('--only <part>', 'publish or streaming')
    .option('--json', 'print JSON')
    .action(async (f: Flags) => {
      if (f.only !== undefined && f.only !== 'publish' && f.only !== 'streaming')
        throw new CliError(`--only must be publish or streaming, got "${f.only}"`, 2);
      const dir = mkdtempSync(join(tmpdir(), 'brainstem-bench-link-'));
      try {
        const o = {
          dataDir: dir,
          calls: int('--calls', f.calls, 1, 100_000),
          duration: int('--duration', f.duration, 1, 3600),
          stateRate: int('--state-rate', f.stateRate, 1, 1000),
          subscribers: int('--subscribers', f.subscribers, 0, 1000),
          subscriberRate: int('--subscriber-rate', f.subscriberRate, 1, 500),
        };
        const result: Record<string, unknown> = {};
        if (f.only !== 'streaming') result.plan_to_publish = await benchPlanToPublish(o);
        if (f.only !== 'publish') result.state_streaming = await benchStateStreaming(o);
        if (f.json || !process.stdout.isTTY) process.stdout.write(JSON.stringify(result) + '\n');
        else process.stdout.write(JSON.stringify(result, null, 2) + '\n');
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });
};
