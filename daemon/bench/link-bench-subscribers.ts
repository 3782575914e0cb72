// Worker thread for `brainstem bench link`: WebSocket apps subscribed to robots.state, kept off
// the daemon's event loop so that the loop's lag is the daemon's own.
import { parentPort, workerData } from 'node:worker_threads';
import { WebSocket } from 'ws';

export interface SubscriberSetup {
  url: string;
  token: string;
  robots: string[];
  clients: number;
  rateHz: number;
}

const setup = workerData as SubscriberSetup;
let received = 0;
const sockets: WebSocket[] = [];

for (let c = 0; c < setup.clients; c++) {
  const ws = new WebSocket(`${setup.url}?token=${encodeURIComponent(setup.token)}`);
  sockets.push(ws);
  ws.on('open', () =>
    setup.robots.forEach((robot, i) =>
      ws.send(
        JSON.stringify({ jsonrpc: '2.0', id: i, method: 'robots.state', params: { robot, rate_hz: setup.rateHz } }),
      ),
    ),
  );
  ws.on('message', (data) => {
    if (String(data).includes('"robots.state"')) received++;
  });
}

parentPort!.on('message', (m: 'count' | 'close') => {
  if (m === 'count') parentPort!.postMessage(received);
  else {
    for (const ws of sockets) ws.close();
    parentPort!.close();
  }
});
