// The daemon's simulated-controller children: a stop sends SIGTERM and each child exits by
// itself with code 0 (the SIGKILL fallback is for a hung child only).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { pino } from 'pino';
import { SimChildren } from '../../../daemon/robots/sim-children.js';
import type { ServedRobot } from '../../../daemon/robots/config.js';
import { freePort } from '../../helpers/ports.js';
import { waitFor } from '../../helpers/wait.js';

function served(id: string): ServedRobot {
  return {
    id,
    robot: 'yam',
    transport: 'ws',
    tracking_error_rad: 0.12,
    settle: {} as ServedRobot['settle'],
    sim: true,
    sim_args: [],
  };
}

test('stopping the sims: each child gets SIGTERM and exits by itself with code 0', async (t) => {
  const lines: Record<string, unknown>[] = [];
  const log = pino({ level: 'info' }, { write: (s: string) => void lines.push(JSON.parse(s)) });
  // Nothing listens there: the children keep retrying the link, as they would with a daemon that is slow to come up.
  const url = `ws://127.0.0.1:${await freePort()}/controller`;
  const sims = new SimChildren({
    robots: [served('s1'), served('s2')],
    base: 'brainstem',
    configsDir: '',
    brokerUrl: () => 'mqtt://127.0.0.1:1',
    controllerUrl: () => url,
    token: 'x'.repeat(32),
    tls: { ca: '', cert: '', key: '' },
    log,
  });
  await sims.start();
  await waitFor(
    () => (lines.filter((l) => /^robot /.test(String(l.msg))).length === 2 ? true : undefined),
    'both sims to report their robot',
    20_000,
  );
  await sims.stop();
  const stopped = lines.filter((l) => l.msg === 'simulated controller stopped');
  assert.deepEqual(
    stopped.map((l) => [l.robot, l.code, l.signal, l.killed]).sort(),
    [
      ['s1', 0, null, false],
      ['s2', 0, null, false],
    ],
    JSON.stringify(lines.slice(-6)),
  );
  // How long a stop took (informative, not asserted).
  t.diagnostic(`stop_ms: ${stopped.map((l) => l.stop_ms).join(', ')}`);
});
