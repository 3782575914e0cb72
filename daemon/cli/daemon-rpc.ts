// A JSON-RPC client of the running daemon for CLI commands: finds it by <data_dir>/daemon.json,
// authenticates with the configured or stored token, and hands notifications to a callback.
import { WebSocket } from 'ws';
import type { Config } from '../config/schema.js';
import { storedSecret } from '../config/secrets.js';
import { readRuntimeInfo } from '../runtime-file.js';
import { CliError } from './exit.js';

export class DaemonRpc {
  private next = 1;
  private readonly pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  readonly closed: Promise<void>;

  private constructor(
    private readonly ws: WebSocket,
    onNotification: (method: string, params: unknown) => void,
  ) {
    ws.on('message', (data) => {
      const msg = JSON.parse(data.toString()) as {
        id?: number;
        method?: string;
        params?: unknown;
        result?: unknown;
        error?: { message: string };
      };
      if (msg.id === undefined && msg.method) return onNotification(msg.method, msg.params);
      const p = msg.id === undefined ? undefined : this.pending.get(msg.id);
      if (!p) return;
      this.pending.delete(msg.id!);
      if (msg.error) p.reject(new CliError(msg.error.message, 2));
      else p.resolve(msg.result);
    });
    this.closed = new Promise((resolve) =>
      ws.once('close', () => {
        for (const p of this.pending.values()) p.reject(new CliError('the daemon closed the connection', 1));
        resolve();
      }),
    );
  }

  /** Connects to the daemon that config's data_dir names. */
  static async connect(config: Config, onNotification: (method: string, params: unknown) => void): Promise<DaemonRpc> {
    const info = readRuntimeInfo(config.data_dir);
    if (!info) throw new CliError(`no running daemon: ${config.data_dir}/daemon.json is missing (brainstem start)`, 1);
    const token = config.server.token || storedSecret(config.data_dir, 'token') || '';
    const ws = new WebSocket(`${info.ws}?token=${encodeURIComponent(token)}`);
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', (e) => reject(new CliError(`cannot reach the daemon at ${info.ws}: ${e.message}`, 1)));
    });
    return new DaemonRpc(ws, onNotification);
  }

  call(method: string, params: unknown): Promise<unknown> {
    const id = this.next++;
    const reply = new Promise<unknown>((resolve, reject) => this.pending.set(id, { resolve, reject }));
    this.ws.send(JSON.stringify({ jsonrpc: '2.0', id, method, params }));
    return reply;
  }

  close(): Promise<void> {
    this.ws.close();
    return this.closed;
  }
}
