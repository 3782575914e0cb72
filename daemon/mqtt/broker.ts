// The embedded MQTT broker (aedes, MQTT 3.1.1) on a loopback TCP port, plus an optional TLS
// listener (mqtt.embedded.tls) for controllers on other machines. Each client logs in as
// one identity (daemon, controller, observer; ./acl.ts) and may publish and subscribe only
// within its grants; a client id belongs to one identity (no takeover). Runs only when
// mqtt.url is empty.
import { timingSafeEqual, createHash } from 'node:crypto';
import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { createServer as createTlsServer } from 'node:tls';
import { Aedes, type AuthenticateError, type Client } from 'aedes';
import type { Logger } from '../log.js';
import { Service } from '../service.js';
import { MAX_MESSAGE_BYTES } from '../../robot/link/protocol.js';
import { MAX_TRAJECTORY_BYTES } from '../../robot/link/protocol-schemas.js';
import { dialHost } from '../util/net.js';
import { streamPair } from '../util/stream-pair.js';
import { limitPackets, type Refusal } from './packet-limit.js';
import { readTlsFiles } from './tls.js';
import { allowed, clientIdOwner, grantsFor, type Grants, type Identity } from './acl.js';

/** The largest CONNECT (client id, credentials, will), bytes after the fixed header. */
const MAX_CONNECT_BYTES = 64 << 10;
/** What a packet may carry beside its payload (topic, properties, packet id), bytes. */
export const PACKET_OVERHEAD_BYTES = 64 << 10;

/** Largest packet after the fixed header: a camera frame or the largest trajectory the planner allows, with overhead. */
export function maxPacketBytes(maxFrameBytes: number): number {
  return Math.max(maxFrameBytes, MAX_TRAJECTORY_BYTES) + PACKET_OVERHEAD_BYTES;
}
export interface BrokerDeps {
  host: string;
  port: number;
  /** Paths of the TLS listener's certificate and key (empty: no TLS listener). */
  tls?: { cert: string; key: string; host: string; port: number };
  /** Topic base the grants are written for (mqtt.base). */
  base: string;
  identities: Identity[];
  /** The largest packet after CONNECT (bytes after the fixed header): a larger one closes the connection. */
  maxPacketBytes: number;
  /** A controller's connection was closed for a packet over the limit (a camera frame, as a rule). */
  onOversize?: (robot: string, refusal: Refusal) => void;
  log: Logger;
}

const digest = (s: string | Buffer) => createHash('sha256').update(s).digest();

interface Account {
  username: string;
  password: Buffer;
  role: Identity['role'];
  grants: Grants;
}

/** Loop turns a stopping broker waits for the deliveries already queued. */
const DELIVERY_TURNS = 2;

function refusal(message: string, returnCode: 2 | 4): AuthenticateError {
  return Object.assign(new Error(message), { returnCode }) as AuthenticateError;
}

export class EmbeddedBroker extends Service {
  readonly name = 'mqtt-broker';
  private aedes?: Aedes;
  private server?: Server;
  private tlsServer?: Server;
  private readonly sockets = new Set<Socket | Duplex>();
  /** Resolved once listening: asking the socket on every health call costs a syscall. */
  private port?: number;
  private tlsPort?: number;

  constructor(private readonly deps: BrokerDeps) {
    super();
  }

  address(): { host: string; port: number } {
    if (this.port === undefined || !this.server?.listening) throw new Error('embedded broker is not listening');
    return { host: this.deps.host, port: this.port };
  }

  /** URL a local client uses to reach this broker (no credentials). */
  url(): string {
    const { host, port } = this.address();
    return `mqtt://${dialHost(host)}:${port}`;
  }

  /**
   * A connection inside this process (the daemon's own client): the client end of a stream pair
   * whose other end the broker serves like a socket, with the same login and grants.
   */
  connectInProcess(): Duplex {
    const [client, served] = streamPair();
    // Stopped: closed at once, as a refused socket (the client retries; a throw would escape its timer).
    if (!this.aedes) {
      served.destroy();
      return client;
    }
    this.sockets.add(served);
    served.once('close', () => this.sockets.delete(served));
    this.aedes.handle(served);
    return client;
  }

  /** mqtts:// URL of the TLS listener, when there is one. */
  tlsUrl(): string | undefined {
    const host = this.deps.tls?.host;
    return this.tlsPort === undefined || host === undefined ? undefined : `mqtts://${dialHost(host)}:${this.tlsPort}`;
  }

  protected override describe() {
    const tls = this.tlsUrl();
    return {
      detail: { url: this.url(), ...(tls ? { tls_url: tls } : {}), clients: this.aedes?.connectedClients ?? 0 },
    };
  }

  protected async onStart(): Promise<void> {
    const { host, port, base, log } = this.deps;
    const accounts = new Map<string, Account>(
      this.deps.identities.map((i) => [
        i.username,
        { username: i.username, password: digest(i.password), role: i.role, grants: grantsFor(base, i.role) },
      ]),
    );
    const logins = new WeakMap<Client, Account>();
    const warned = new WeakSet<Client>();
    const aedes = await Aedes.createBroker({
      authenticate: (client, username, password, done) => {
        const account = username === undefined ? undefined : accounts.get(username);
        // Compare a digest even for unknown users, so timing does not tell which names exist.
        const ok = timingSafeEqual(digest(password ?? ''), account?.password ?? digest('\0unknown'));
        if (!account || !ok || password === undefined) {
          log.warn({ client: client.id, username }, 'MQTT client refused: bad username or password');
          return done(refusal('bad username or password', 4), null);
        }
        const owner = clientIdOwner(client.id, accounts.keys());
        // Connected clients by id: in aedes but not in its typings.
        const holder = (aedes as unknown as { clients: Record<string, Client | undefined> }).clients[client.id];
        const heldBy = holder ? logins.get(holder)?.username : undefined;
        if ((owner !== undefined && owner !== username) || (heldBy !== undefined && heldBy !== username)) {
          log.warn(
            { client: client.id, username, owner: owner ?? heldBy },
            'MQTT client refused: client id of another identity',
          );
          return done(refusal('client id belongs to another identity', 2), null);
        }
        logins.set(client, account);
        done(null, true);
      },
      authorizePublish: (client, packet, done) => {
        const account = client ? logins.get(client) : undefined;
        const why = !account
          ? 'not logged in'
          : !allowed(account.grants.publish, packet.topic)
            ? 'topic not granted'
            : packet.retain
              ? retainProblem(account.grants, packet.topic, packet.payload)
              : undefined;
        if (why === undefined) return done(null);
        log.warn({ client: client?.id, username: account?.username, topic: packet.topic, why }, 'MQTT publish refused');
        done(new Error(`publish to ${packet.topic} not allowed: ${why}`));
      },
      // Every delivery is checked against the login's grants: aedes stores a persistent session's
      // refused filters too and would forward queued messages on them at the next connect.
      authorizeForward: (client, packet) => {
        const account = logins.get(client);
        return account && allowed(account.grants.subscribe, packet.topic) ? packet : null;
      },
      authorizeSubscribe: (client, sub, done) => {
        const account = logins.get(client);
        if (account && allowed(account.grants.subscribe, sub.topic)) return done(null, sub);
        // The connection stays: warn once per client, so a looping client cannot flood the log.
        const level = warned.has(client) ? 'debug' : 'warn';
        warned.add(client);
        log[level]({ client: client.id, username: account?.username, topic: sub.topic }, 'MQTT subscribe refused');
        done(null, null);
      },
    });
    aedes.on('clientError', (client, err) => log.debug({ client: client.id, err: err.message }, 'MQTT client error'));
    aedes.on('connectionError', (client, err) =>
      log.debug({ client: client?.id, err: err.message }, 'MQTT connection error'),
    );
    this.aedes = aedes;
    const { maxPacketBytes, onOversize } = this.deps;
    const handle = (socket: Socket) => {
      this.sockets.add(socket);
      socket.once('close', () => this.sockets.delete(socket));
      const limit = (index: number) => (index === 0 ? MAX_CONNECT_BYTES : maxPacketBytes);
      const guarded = limitPackets(socket, limit, (r) => {
        // aedes keeps its client on the stream it serves (`conn.client`), not in its typings.
        const client = (guarded as { client?: Client }).client;
        const account = client ? logins.get(client) : undefined;
        log.warn(
          { remote: socket.remoteAddress, username: account?.username, ...r },
          'MQTT connection closed: packet larger than allowed',
        );
        if (account?.role.kind === 'controller' && r.declared >= 0) onOversize?.(account.role.robot, r);
      });
      aedes.handle(guarded);
    };
    this.server = createServer(handle);
    this.port = await listen(
      this.server,
      host,
      port,
      'mqtt.embedded.port (BRAINSTEM_MQTT_EMBEDDED_PORT) or set mqtt.url',
    );
    const tls = this.deps.tls;
    if (tls?.cert) {
      const files = readTlsFiles({ cert: tls.cert, key: tls.key }, (k) => `mqtt.embedded.tls.${k}`);
      this.tlsServer = createTlsServer({ cert: files.cert, key: files.key }, handle);
      this.tlsServer.on('tlsClientError', (err) => log.debug({ err: err.message }, 'MQTT TLS handshake failed'));
      this.tlsPort = await listen(this.tlsServer, tls.host, tls.port, 'mqtt.embedded.tls.port');
      log.info({ url: this.tlsUrl() }, 'embedded MQTT broker listening for TLS');
    }
    log.info({ url: this.url() }, 'embedded MQTT broker listening');
  }

  protected async onStop(): Promise<void> {
    // aedes hands deliveries to subscribers on a later turn (setImmediate): the daemon's last
    // publishes (offline availability, over the in-process link) go out before the broker closes.
    for (let i = 0; i < DELIVERY_TURNS; i++) await new Promise((resolve) => setImmediate(resolve));
    const closing = [this.server, this.tlsServer].map((server) =>
      server?.listening ? new Promise<void>((resolve) => server.close(() => resolve())) : Promise.resolve(),
    );
    if (this.aedes) await new Promise<void>((resolve) => this.aedes!.close(() => resolve()));
    for (const s of this.sockets) s.destroy();
    await Promise.all(closing);
    this.aedes = undefined;
    this.server = undefined;
    this.tlsServer = undefined;
    this.tlsPort = undefined;
  }
}

/**
 * Why a retained publish is refused, or undefined. Only an identity's own availability and
 * description are retained (protocol.md): any other would be replayed later as new, and every
 * retained topic is kept in memory and sent to each new subscriber.
 */
function retainProblem(grants: Grants, topic: string, payload: Buffer | string): string | undefined {
  if (!grants.retain.includes(topic)) return `retain is allowed only on ${grants.retain.join(', ') || 'no topic'}`;
  const bytes = Buffer.byteLength(payload);
  if (bytes > MAX_MESSAGE_BYTES) return `a retained payload must be at most ${MAX_MESSAGE_BYTES} bytes, got ${bytes}`;
  return undefined;
}

/** Listens on host:port and resolves the bound port; a failure names the setting to change. */
function listen(server: Server, host: string, port: number, setting: string): Promise<number> {
  return new Promise<number>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) =>
      reject(new Error(`cannot listen on ${host}:${port}: ${err.code ?? err.message}; choose another ${setting}`)),
    );
    server.listen(port, host, () => resolve((server.address() as AddressInfo).port));
  });
}
