// One controller socket per robot: a second socket (same API token) announcing a robot that an
// open socket serves is closed with a reason naming the robot; commands still go to the first,
// whose close is the robot's offline, after which another socket may serve it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { pino } from 'pino';
import { WebSocket, WebSocketServer } from 'ws';
import { WS_POLICY_VIOLATION, WsControllers } from '../../../daemon/robots/ws-controllers.js';
import { within } from '../../helpers/wait.js';

const stop = { v: 1 as const, id: 's-1', arm: null, time: 0, reason: 'test' };

test('a second socket cannot take over a robot served by an open socket', async (t) => {
  const messages: string[] = [];
  const closed: string[] = [];
  let released: () => void = () => undefined;
  const offline = new Promise<void>((resolve) => (released = resolve));
  const controllers = new WsControllers(
    {
      accepts: (robot) => robot === 'r',
      message: (robot, type) => messages.push(`${robot}:${type}`),
      scene: () => undefined,
      closed: (robot) => {
        closed.push(robot);
        released();
      },
      frame: () => undefined,
      dropped: () => undefined,
      invalid: () => undefined,
    },
    pino({ level: 'silent' }),
  );
  const server = new WebSocketServer({ host: '127.0.0.1', port: 0 });
  await once(server, 'listening');
  server.on('connection', (ws) => controllers.attach(ws, 'test'));
  const url = `ws://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const sockets: WebSocket[] = [];
  t.after(async () => {
    for (const ws of sockets) ws.terminate();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
  const open = async () => {
    const ws = new WebSocket(url);
    sockets.push(ws);
    await once(ws, 'open');
    return ws;
  };
  // A reply to a ping comes after every message sent before it was handled.
  const handled = async (ws: WebSocket) => {
    ws.ping();
    await once(ws, 'pong');
  };
  const a = await open();
  const b = await open();
  const online = JSON.stringify({ type: 'availability', robot: 'r', payload: 'online' });
  a.send(online);
  await handled(a);

  const bClosed = once(b, 'close');
  b.send(online);
  const [code, reason] = (await within(bClosed, 10_000, "the second socket's close")) as [number, Buffer];
  assert.equal(code, WS_POLICY_VIOLATION);
  assert.equal(reason.toString(), 'robot r: served by another open socket (one socket per robot)');
  assert.deepEqual(messages, ['r:availability'], "the second socket's envelope is not delivered");
  assert.deepEqual(closed, [], 'the robot is still served');

  // Commands still go to the first socket.
  const got = once(a, 'message');
  assert.equal(controllers.send('r', 'stop', stop), null);
  assert.equal(JSON.parse(String((await got)[0])).type, 'stop');

  // Its close releases the robot (offline), and another socket may serve it.
  a.close();
  await once(a, 'close');
  await within(offline, 10_000, 'the offline of robot r');
  assert.deepEqual(closed, ['r']);
  const c = await open();
  c.send(online);
  await handled(c);
  assert.deepEqual(messages, ['r:availability', 'r:availability']);
  const toC = once(c, 'message');
  assert.equal(controllers.send('r', 'stop', stop), null);
  assert.equal(JSON.parse(String((await toC)[0])).type, 'stop');
});
