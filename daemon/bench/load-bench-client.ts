// Child process of `brainstem bench load`, kept off the daemon's process so that its event loop
// and RSS are the daemon's own. Role "observer" records the daemon heartbeat's arrival times over
// MQTT; role "flood" runs WebSocket clients that send valid and invalid traffic as fast as they are
// answered, and a share of them that never read their replies; role "mqtt" floods the broker as an
// observer identity: subscribes it may and may not make, refused publishes (which cost the
// connection) and wrong passwords, reconnecting each time.
import { connect, connectAsync, type MqttClient } from 'mqtt';
import { WebSocket } from 'ws';

export interface LoadClientSetup {
  role: 'observer' | 'flood' | 'mqtt' | 'motion';
  seconds: number;
  /** flood: the JSON-RPC endpoint and token, clients in this process, and every how many does not read. */
  ws?: { url: string; token: string; clients: number; nonReaderEvery: number; maxBatch: number; maxDepth: number };
  /** observer: the broker and the heartbeat topic. */
  mqtt?: { url: string; username: string; password: string; topic: string };
  /** motion: the JSON-RPC endpoint and token and the simulated robot moved back and forth. */
  motion?: { url: string; token: string; robot: string };
  /** mqtt: the broker, an observer identity, topics it may read and may not write, and connections. */
  mqttFlood?: { url: string; username: string; password: string; base: string; clients: number };
}

export interface LoadClientReport {
  heartbeatTimesMs?: number[];
  latenciesMs?: number[];
  sent: number;
  replies: number;
  errors: Record<string, number>;
  closes: Record<string, number>;
  /** mqtt: sessions opened, logins refused, subscriptions refused, connections closed after a refused publish. */
  /** motion: move_to outcomes by status (anything but ok means the flood disturbed a motion). */
  motions?: Record<string, number>;
  disturbedAtS?: number[];
  mqtt?: { connects: number; refused_logins: number; refused_subscriptions: number; closed_after_publish: number };
}

const IN_FLIGHT = 4;
const MAX_SAMPLES = 50_000;
/** Times of motions that did not end ok, seconds into the flood (the first ones). */
const MAX_DISTURBANCES = 50;
const setup = JSON.parse(process.argv[2] ?? '{}') as LoadClientSetup;
const report: LoadClientReport = { latenciesMs: [], sent: 0, replies: 0, errors: {}, closes: {} };
function bump(m: Record<string, number>, k: string): void {
  m[k] = (m[k] ?? 0) + 1;
}

/** The traffic mix: one valid timed call, then each kind of invalid message in turn. */
function messages(maxBatch: number, maxDepth: number): ((id: number) => string)[] {
  const deep = '['.repeat(maxDepth + 10) + ']'.repeat(maxDepth + 10);
  const call = (id: number) => ({ jsonrpc: '2.0', id, method: 'system.health' });
  return [
    (id) => JSON.stringify(call(id)),
    () => '{"jsonrpc":"2.0","id":',
    (id) => JSON.stringify({ jsonrpc: '2.0', id, method: 'system.reboot' }),
    (id) => JSON.stringify({ jsonrpc: '2.0', id, method: 'system.subscribe', params: { interval_ms: 'often' } }),
    (id) => `{"jsonrpc":"2.0","id":${id},"method":"system.info","params":{"__proto__":{"admin":true}}}`,
    (id) => `{"jsonrpc":"2.0","id":${id},"method":"system.info","params":{"x":${deep}}}`,
    (id) => JSON.stringify(Array.from({ length: maxBatch + 1 }, (_, i) => call(id * 10_000 + i))),
    (id) => JSON.stringify(call(id)),
  ];
}

function flood(): Promise<void> {
  const o = setup.ws!;
  const kinds = messages(o.maxBatch, o.maxDepth);
  const end = Date.now() + setup.seconds * 1000;
  const sockets: WebSocket[] = [];
  const started = new Map<number, number>();
  let nextId = 1;
  const done: Promise<void>[] = [];
  for (let c = 0; c < o.clients; c++) {
    const ws = new WebSocket(`${o.url}?token=${encodeURIComponent(o.token)}`, { maxPayload: 64 << 20 });
    sockets.push(ws);
    const nonReader = o.nonReaderEvery > 0 && c % o.nonReaderEvery === o.nonReaderEvery - 1;
    let turn = c;
    const send = () => {
      if (ws.readyState !== WebSocket.OPEN || Date.now() > end) return;
      const id = nextId++;
      const k = turn++ % kinds.length;
      if (k === 0) started.set(id, performance.now());
      report.sent++;
      ws.send(kinds[k]!(id));
    };
    ws.on('open', () => {
      if (!nonReader) {
        for (let i = 0; i < IN_FLIGHT; i++) send();
        return;
      }
      // Never reads: full valid batches whose replies pile up on the daemon's side.
      ws.pause();
      const batch = JSON.stringify(
        Array.from({ length: o.maxBatch }, (_, i) => ({ jsonrpc: '2.0', id: i, method: 'system.health' })),
      );
      for (let i = 0; i < 15; i++) {
        report.sent++;
        ws.send(batch);
      }
    });
    ws.on('message', (data) => {
      report.replies++;
      const text = String(data);
      const id = /^\{"jsonrpc":"2\.0","id":(\d+),"result"/.exec(text)?.[1];
      const t0 = id === undefined ? undefined : started.get(Number(id));
      if (t0 !== undefined) {
        started.delete(Number(id));
        if (report.latenciesMs!.length < MAX_SAMPLES) report.latenciesMs!.push(performance.now() - t0);
      }
      const code = /"error":\{"code":(-?\d+)/.exec(text)?.[1];
      if (code) bump(report.errors, code);
      send();
    });
    ws.on('error', () => undefined);
    // Closes by the daemon during the run (1008: backlog, 1006: cut off); not the bench's own at the end.
    done.push(
      new Promise((resolve) =>
        ws.once('close', (code) => {
          if (Date.now() <= end) bump(report.closes, String(code));
          resolve();
        }),
      ),
    );
  }
  return new Promise((resolve) =>
    setTimeout(
      () => {
        for (const ws of sockets) ws.terminate();
        void Promise.all(done).then(() => resolve());
      },
      setup.seconds * 1000 + 500,
    ),
  );
}

async function observe(): Promise<void> {
  const o = setup.mqtt!;
  const client = await connectAsync(o.url, { username: o.username, password: o.password, protocolVersion: 4 });
  const times: number[] = [];
  client.on('message', () => times.push(performance.now()));
  await client.subscribeAsync(o.topic, { qos: 0 });
  process.send!({ ready: true });
  await new Promise((r) => setTimeout(r, setup.seconds * 1000));
  await client.endAsync();
  report.heartbeatTimesMs = times;
}

/** One observer session: allowed and refused subscriptions, then a publish it may not make. */
function mqttSession(o: NonNullable<LoadClientSetup['mqttFlood']>, wrongPassword: boolean): Promise<void> {
  report.mqtt ??= { connects: 0, refused_logins: 0, refused_subscriptions: 0, closed_after_publish: 0 };
  const m = report.mqtt;
  return new Promise((resolve) => {
    const client: MqttClient = connect(o.url, {
      username: o.username,
      password: wrongPassword ? `${o.password}x` : o.password,
      protocolVersion: 4,
      reconnectPeriod: 0,
      connectTimeout: 2000,
    });
    let published = false;
    let ended = false;
    // The broker should close it at once; one that is still open is ended here (and not counted).
    const done = setTimeout(() => {
      ended = true;
      client.end(true);
    }, 2000);
    client.on('error', () => {
      if (!published) m.refused_logins++;
    });
    client.once('close', () => {
      clearTimeout(done);
      if (published && !ended) m.closed_after_publish++;
      resolve();
    });
    client.on('connect', () => {
      m.connects++;
      client.subscribe([`${o.base}/#`, '$SYS/#', 'elsewhere/#'], { qos: 0 }, (err, granted) => {
        // mqtt.js reports a SUBACK with refusals as an error carrying the packet's return codes.
        const codes =
          (err as { packet?: { granted?: number[] } } | null)?.packet?.granted ?? granted?.map((g) => g.qos);
        for (const q of codes ?? []) if (q === 128) m.refused_subscriptions++;
        published = true;
        client.publish(`${o.base}/robots/arm/cmd`, '{"not":"allowed"}', { qos: 0 });
        client.publish(`${o.base}/daemon/heartbeat`, 'x'.repeat(1000), { qos: 0 });
      });
    });
  });
}

async function mqttFlood(): Promise<void> {
  const o = setup.mqttFlood!;
  const end = Date.now() + setup.seconds * 1000;
  await Promise.all(
    Array.from({ length: o.clients }, async (_, c) => {
      for (let i = 0; Date.now() < end; i++) await mqttSession(o, (c + i) % 5 === 4);
    }),
  );
}

/** Moves the simulated arm 2 cm back and forth with robots.call move_to until the time is up. */
async function motion(): Promise<void> {
  const o = setup.motion!;
  let end = Date.now() + 60_000;
  const ws = new WebSocket(`${o.url}?token=${encodeURIComponent(o.token)}`);
  await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
  const waiting = new Map<number, (r: { result?: Record<string, unknown> }) => void>();
  ws.on('message', (data) => {
    const m = JSON.parse(String(data)) as { id?: number; result?: Record<string, unknown> };
    if (m.id !== undefined) waiting.get(m.id)?.(m);
  });
  let id = 0;
  const rpc = (method: string, params: object) =>
    new Promise<Record<string, unknown> | undefined>((resolve) => {
      const n = ++id;
      waiting.set(n, (r) => resolve(r.result));
      ws.send(JSON.stringify({ jsonrpc: '2.0', id: n, method, params }));
    });
  const call = (name: string, args: object) => rpc('robots.call', { robot: o.robot, call: { name, arguments: args } });
  // Ready: the controller is online, fresh and reports no fault (it has heard the daemon's heartbeat).
  const ready = async () => {
    const list = (await rpc('robots.list', {})) as { robots?: { id: string; ready: boolean }[] } | undefined;
    return list?.robots?.find((r) => r.id === o.robot)?.ready === true;
  };
  const motions: Record<string, number> = {};
  report.motions = motions;
  let tcp: number[] | undefined;
  while (!tcp && Date.now() < end) {
    const s = (await ready()) ? ((await call('get_state', {})) as { arms?: { arm?: { tcp?: number[] } } }) : undefined;
    tcp = s?.arms?.arm?.tcp;
    if (!tcp) await new Promise((r) => setTimeout(r, 100));
  }
  // The robot is up: the flood starts now.
  process.send!({ ready: true });
  const start = Date.now();
  end = start + setup.seconds * 1000;
  report.disturbedAtS = [];
  for (let i = 0; tcp && Date.now() < end; i++) {
    const r = await call('move_to', {
      target: { pose_xyzquat: [tcp[0]! + (i % 2 === 0 ? 0.02 : 0), ...tcp.slice(1)] },
    });
    // Outcomes other than ok keep the start of their message: why the motion did not finish.
    const outcome =
      r?.status === 'ok' ? 'ok' : `${String(r?.status)}: ${String(r?.message).replace(/\d+/g, 'N').slice(0, 80)}`;
    bump(motions, outcome);
    if (outcome !== 'ok' && report.disturbedAtS!.length < MAX_DISTURBANCES)
      report.disturbedAtS!.push(Math.round(Date.now() - start) / 1000);
  }
  ws.close();
}

const roles = { observer: observe, flood, mqtt: mqttFlood, motion };
await roles[setup.role]();
process.send!(report, () => process.exit(0));
