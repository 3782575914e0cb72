// Controller end of the protocol over the daemon's WebSocket (`/controller`, token as a Bearer
// header). Frames are envelopes (ws-envelope.ts), camera frames binary (camera-protocol.ts); a
// closing socket is either side's last will.
import WebSocket from 'ws';
import { encodeEnvelope, SENDS } from './ws-envelope.js';
import { encodeCameraFrame, type FrameMeta } from './camera-protocol.js';
import {
  UNSENT_FRAME_BYTES,
  parsePayload,
  type ControllerLink,
  type ControllerLinkHandlers,
  type ControllerReceives,
  type ControllerSends,
} from './controller-link.js';
import type { MessageBySuffix } from './protocol-validate.js';
import type { SimSceneMsg } from './sim-scene.js';

export interface ControllerWsOptions {
  url: string;
  robot: string;
  token: string | null;
  /** Seconds between reconnection attempts. */
  reconnect?: number;
}

export class ControllerWs implements ControllerLink {
  private ws: WebSocket | null = null;
  private retry: NodeJS.Timeout | null = null;
  private stopped = false;

  constructor(
    private readonly opts: ControllerWsOptions,
    private readonly on: ControllerLinkHandlers,
  ) {
    this.open();
  }

  get connected(): boolean {
    return this.ws?.readyState === WebSocket.OPEN;
  }

  send<K extends ControllerSends>(type: K, payload: MessageBySuffix[K]): void {
    if (this.connected) this.ws!.send(encodeEnvelope(type, this.opts.robot, payload));
  }

  /** One binary message: header length, JSON header {type: camera, robot, camera, meta}, image. */
  sendFrame(camera: string, image: Buffer, meta: FrameMeta): boolean {
    if (!this.connected || this.ws!.bufferedAmount > UNSENT_FRAME_BYTES) return false;
    this.ws!.send(encodeCameraFrame(this.opts.robot, camera, meta, image));
    return true;
  }

  sendScene(payload: SimSceneMsg): void {
    if (this.connected) this.ws!.send(encodeEnvelope('sim_scene', this.opts.robot, payload));
  }

  drop(): void {
    this.stopped = true;
    this.clearRetry();
    this.ws?.terminate();
    this.ws = null;
  }

  reconnect(): void {
    this.stopped = false;
    if (!this.ws) this.open();
  }

  async close(): Promise<void> {
    this.stopped = true;
    this.clearRetry();
    const ws = this.ws;
    this.ws = null;
    if (!ws) return;
    if (ws.readyState === WebSocket.OPEN) ws.send(encodeEnvelope('availability', this.opts.robot, 'offline'));
    await new Promise<void>((resolve) => {
      if (ws.readyState === WebSocket.CLOSED) return resolve();
      ws.once('close', () => resolve());
      ws.close(1000, 'controller closing');
    });
  }

  private open(): void {
    const headers: Record<string, string> = this.opts.token ? { authorization: `Bearer ${this.opts.token}` } : {};
    const ws = new WebSocket(this.opts.url, { headers, handshakeTimeout: 5000 });
    this.ws = ws;
    ws.on('open', () => this.on.up());
    ws.on('message', (data) => {
      // The payload goes on unvalidated so that a bad command is rejected with its id.
      const env = parsePayload(data.toString()) as { type?: unknown; payload?: unknown } | null;
      if (SENDS.daemon.includes(env?.type as never)) this.on.message(env!.type as ControllerReceives, env!.payload);
    });
    ws.on('unexpected-response', (_req, res) =>
      this.on.down(`the daemon refused the WebSocket: HTTP ${res.statusCode}`),
    );
    ws.on('error', (err) => this.on.down(err.message));
    ws.on('close', (code, reason) => {
      if (this.ws !== ws) return;
      this.ws = null;
      // The daemon's socket closing is its last will: the controller stops at once.
      this.on.message('daemon_availability', 'offline');
      this.on.down(reason.length ? `connection closed (${code}: ${reason.toString()})` : 'connection closed');
      if (this.stopped) return;
      this.retry = setTimeout(
        () => {
          this.retry = null;
          this.open();
        },
        (this.opts.reconnect ?? 1) * 1000,
      );
    });
  }

  private clearRetry(): void {
    if (this.retry) clearTimeout(this.retry);
    this.retry = null;
  }
}
