// The embedded MQTT broker (aedes, MQTT 3.1.1) on a loopback TCP port, password protected.
// Runs only when mqtt.url is empty.
import { timingSafeEqual, createHash } from 'node:crypto';
import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { Aedes, type AuthenticateError } from 'aedes';
import type { Logger } from '../log.js';
import { Service } from '../service.js';
import { dialHost } from '../util/net.js';

export interface BrokerDeps {
  host: string;
  port: number;
  username: string;
  password: string;
  log: Logger;
}

const digest = (s: string | Buffer) => createHash('sha256').update(s).digest();

export class EmbeddedBroker extends Service {
  readonly name = 'mqtt-broker';
  private aedes?: Aedes;
  private server?: Server;
  private readonly sockets = new Set<Socket>();

  constructor(private readonly deps: BrokerDeps) {
    super();
  }

  address(): { host: string; port: number } {
    const a = this.server?.address() as AddressInfo | null | undefined;
    if (!a) throw new Error('embedded broker is not listening');
    return { host: this.deps.host, port: a.port };
  }

  /** URL a local client uses to reach this broker (no credentials). */
  url(): string {
    const { host, port } = this.address();
    return `mqtt://${dialHost(host)}:${port}`;
  }

  protected override describe() {
    return { detail: { url: this.url(), clients: this.aedes?.connectedClients ?? 0 } };
  }

  protected async onStart(): Promise<void> {
    const { host, port, log } = this.deps;
    const user = digest(this.deps.username);
    const pass = digest(this.deps.password);
    const aedes = await Aedes.createBroker({
      authenticate: (client, username, password, done) => {
        const ok =
          username !== undefined &&
          password !== undefined &&
          timingSafeEqual(digest(username), user) &&
          timingSafeEqual(digest(password), pass);
        if (ok) return done(null, true);
        log.warn({ client: client.id, username }, 'MQTT client refused: bad username or password');
        const err = Object.assign(new Error('bad username or password'), { returnCode: 4 }) as AuthenticateError;
        done(err, null);
      },
    });
    aedes.on('clientError', (client, err) => log.debug({ client: client.id, err: err.message }, 'MQTT client error'));
    aedes.on('connectionError', (client, err) =>
      log.debug({ client: client?.id, err: err.message }, 'MQTT connection error'),
    );
    this.aedes = aedes;
    const server = createServer((socket) => {
      this.sockets.add(socket);
      socket.once('close', () => this.sockets.delete(socket));
      aedes.handle(socket);
    });
    this.server = server;
    await new Promise<void>((resolve, reject) => {
      server.once('error', (err: NodeJS.ErrnoException) =>
        reject(
          new Error(
            `cannot listen on ${host}:${port}: ${err.code ?? err.message}; choose another mqtt.embedded.port (BRAINSTEM_MQTT_EMBEDDED_PORT) or set mqtt.url`,
          ),
        ),
      );
      server.listen(port, host, () => resolve());
    });
    log.info({ url: this.url() }, 'embedded MQTT broker listening');
  }

  protected async onStop(): Promise<void> {
    const server = this.server;
    const closed = server?.listening
      ? new Promise<void>((resolve) => server.close(() => resolve()))
      : Promise.resolve();
    if (this.aedes) await new Promise<void>((resolve) => this.aedes!.close(() => resolve()));
    for (const s of this.sockets) s.destroy();
    await closed;
    this.aedes = undefined;
    this.server = undefined;
  }
}
