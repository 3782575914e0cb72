// `brainstem bench load`: heartbeat period, API latency and a motion's outcome while WebSocket
// clients and MQTT sessions flood the daemon with valid and invalid traffic
// (daemon/bench/load-bench.ts). Prints JSON.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Command } from 'commander';
import { runLoadBench } from '../bench/load-bench.js';
import { intOption, printBench } from './bench-common.js';
import { type CommandRegistrar, group } from './group.js';

interface Flags {
  clients: string;
  duration: string;
  processes: string;
  nonReaderEvery: string;
  mqttClients: string;
  json?: boolean;
}

export const registerBenchLoad: CommandRegistrar = (program: Command) => {
  group(program, 'bench')
    .command('load')
    .description(
      'heartbeat gaps, API latency, motion outcomes and RSS while WebSocket clients flood the API and MQTT sessions the broker with valid and invalid traffic',
    )
    .option('--clients <n>', 'WebSocket clients', '200')
    .option('--duration <s>', 'seconds of flooding', '10')
    .option('--processes <n>', 'client processes the clients are spread over', '4')
    .option('--non-reader-every <n>', 'every n-th client never reads its replies (0: none)', '10')
    .option('--mqtt-clients <n>', 'MQTT connections flooding the broker as an observer (0: none)', '10')
    .option('--json', 'print JSON')
    .action(async (f: Flags) => {
      const clients = intOption('clients', f.clients, 1, 10_000);
      const dir = mkdtempSync(join(tmpdir(), 'brainstem-bench-load-'));
      try {
        const result = await runLoadBench({
          dataDir: dir,
          clients,
          seconds: intOption('duration', f.duration, 1, 3600),
          processes: Math.min(clients, intOption('processes', f.processes, 1, 64)),
          nonReaderEvery: intOption('non-reader-every', f.nonReaderEvery, 0, 10_000),
          mqttClients: intOption('mqtt-clients', f.mqttClients, 0, 1000),
        });
        printBench(result, f.json);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });
};
