// A JSON-RPC client of the running daemon for CLI commands: finds it by <data_dir>/daemon.json,
// authenticates with the configured or stored token, and hands notifications to a callback.
// Every wait has an end: a stale daemon.json, a stopped daemon or a stranger on its port is an
// error after `timeoutMs`, never a hang.
import { WebSocket } from 'ws';
import type { Config } from '../config/schema.js';
import { storedSecret } from '../config/secrets.js';
import { readRuntimeInfo, runtimeFile } from '../runtime-file.js';
import { isRecord } from '../../robot/common/validation/values.js';
import { CliError } from './exit.js';

export const CONNECT_TIMEOUT_MS = 10_000;

export interface ConnectOptions {
  /** How long the connection and WebSocket handshake may take (default 10 s). */
  timeoutMs?: number;
  /** Where a message that is not JSON-RPC is reported (default stderr); it is then ignored. */
  onWarning?: (text: string) => void;
}

interface Message {
  id?: number;
  method?: string;
  params?: unknown;
  result?: unknown;
  error?: { message: string };
}

/** Whether a process with this id exists (EPERM: it does, owned by someone else). */
function pidRunning(pid: unknown): boolean {
  if (!Number.isInteger(pid) || (pid as number) <= 0) return false;
  try {
    process.kill(pid as number, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export class DaemonRpc {
  private next = 1;
  private readonly pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  /** Why we closed the connection ourselves; pending calls fail with it instead of "the daemon closed". */
  private closeReason?: Error;
  readonly closed: Promise<void>;

  private constructor(
    private readonly ws: WebSocket,
    onNotification: (method: string, params: unknown) => void,
    warn: (text: string) => void,
  ) {
    ws.on('message', (data) => {
      let raw: unknown;
      try {
        raw = JSON.parse(data.toString());
      } catch {
        return warn('ignored a message from the daemon that is not JSON');
      }
      if (!isRecord(raw)) return warn('ignored a message from the daemon that is not a JSON-RPC object');
      const msg = raw as Message;
      if (msg.id === undefined && typeof msg.method === 'string') return onNotification(msg.method, msg.params);
      const p = msg.id === undefined ? undefined : this.pending.get(msg.id);
      if (!p) return;
      this.pending.delete(msg.id!);
      if (msg.error) p.reject(new CliError(String(msg.error.message), 2));
      else p.resolve(msg.result);
    });
    // Errors after the handshake end in 'close', which fails every pending call.
    ws.on('error', () => undefined);
    this.closed = new Promise((resolve) =>
      ws.once('close', () => {
        const reason = this.closeReason ?? new CliError('the daemon closed the connection', 1);
        for (const p of this.pending.values()) p.reject(reason);
        this.pending.clear();
        resolve();
      }),
    );
  }

  /** Connects to the daemon that config's data_dir names. */
  static async connect(
    config: Config,
    onNotification: (method: string, params: unknown) => void,
    opts: ConnectOptions = {},
  ): Promise<DaemonRpc> {
    const file = runtimeFile(config.data_dir);
    const info = readRuntimeInfo(config.data_dir);
    if (!info) throw new CliError(`no running daemon: ${file} is missing (brainstem start)`, 1);
    // A daemon killed without cleanup leaves the file behind; its port may belong to anyone now.
    if (!pidRunning(info.pid))
      throw new CliError(`${file} names pid ${info.pid}, which is not running; start the daemon (brainstem start)`, 1);
    const timeoutMs = opts.timeoutMs ?? CONNECT_TIMEOUT_MS;
    const token = config.server.token || storedSecret(config.data_dir, 'token') || '';
    const ws = new WebSocket(`${info.ws}?token=${encodeURIComponent(token)}`);
    ws.on('error', () => undefined); // reported once below; later ones would be unhandled
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        ws.terminate();
        reject(
          new CliError(
            `the daemon at ${info.ws} (pid ${info.pid}) did not answer within ${timeoutMs / 1000} s: is it stopped (kill -CONT ${info.pid}) or is another program on that port?`,
            1,
          ),
        );
      }, timeoutMs);
      ws.once('open', () => {
        clearTimeout(timer);
        resolve();
      });
      ws.once('error', (e) => {
        clearTimeout(timer);
        reject(new CliError(`cannot reach the daemon at ${info.ws}: ${e.message}`, 1));
      });
    });
    return new DaemonRpc(ws, onNotification, opts.onWarning ?? ((t) => process.stderr.write(`brainstem: ${t}\n`)));
  }

  call(method: string, params: unknown): Promise<unknown> {
    if (this.ws.readyState !== WebSocket.OPEN)
      return Promise.reject(
        this.closeReason ?? new CliError(`cannot call ${method}: the connection to the daemon is closed`, 1),
      );
    const id = this.next++;
    const reply = new Promise<unknown>((resolve, reject) => this.pending.set(id, { resolve, reject }));
    this.ws.send(JSON.stringify({ jsonrpc: '2.0', id, method, params }));
    return reply;
  }

  /** Closes the connection; `reason` is what calls still waiting fail with (default: the daemon closed it). */
  close(reason?: Error): Promise<void> {
    this.closeReason ??= reason;
    this.ws.close();
    return this.closed;
  }
}
