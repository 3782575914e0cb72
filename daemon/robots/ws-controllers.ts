// Controllers connected over the WebSocket `/controller` (token checked by the API server).
// Each text frame is one envelope, each binary frame one camera frame; a socket serves the robots
// it announced, and its closing is their last will: each of them is offline for the daemon.
import type { WebSocket } from 'ws';
import type { Logger } from '../log.js';
import { decodeEnvelope, encodeEnvelope, type EnvelopeType } from '../../robot/link/ws-envelope.js';
import type { MessageBySuffix } from '../../robot/link/protocol-validate.js';
import { decodeCameraFrame, type CameraFrame } from '../../robot/link/camera-protocol.js';
import type { FrameProblem } from '../../robot/link/image-header.js';
import type { SimSceneMsg } from '../../robot/link/sim-scene.js';
import { MAX_MESSAGE_BYTES, oversize } from '../../robot/link/protocol.js';
import type { ControllerMessage } from './runtime.js';

export interface WsControllerHandlers {
  /** Whether `robot` is served over WebSocket (others are refused). */
  accepts(robot: string): boolean;
  message(robot: string, type: ControllerMessage, payload: MessageBySuffix[ControllerMessage]): void;
  /** A simulator's ground truth. */
  scene(robot: string, payload: SimSceneMsg): void;
  /** The socket that served `robot` closed. */
  closed(robot: string): void;
  /** A camera frame whose header and metadata are valid (the image is checked by the receiver). */
  frame(robot: string, frame: CameraFrame): void;
  /** A camera frame refused before its camera could be told (unreadable header, too large for the socket). */
  dropped(robot: string, problem: FrameProblem): void;
  /** A text envelope refused unread (too large), counted for each robot its socket serves. */
  invalid(robot: string, message: string): void;
}

/** WebSocket close code for a socket that broke a rule of the link (RFC 6455: policy violation). */
export const WS_POLICY_VIOLATION = 1008;

/** Distinct problems logged per controller socket. */
export const MAX_WARNINGS = 32;

export class WsControllers {
  /** Robot id → the socket that announced it last. */
  private readonly byRobot = new Map<string, WebSocket>();
  private readonly sockets = new Set<WebSocket>();

  constructor(
    private readonly on: WsControllerHandlers,
    private readonly log: Logger,
  ) {}

  attach(ws: WebSocket, remote: string | undefined): void {
    this.sockets.add(ws);
    // One warning per kind of problem, and at most MAX_WARNINGS kinds: a controller sending ever
    // new invalid envelopes cannot flood the log or grow this set without bound.
    const warned = new Set<string>();
    const warn = (key: string, msg: string, extra: Record<string, unknown>) => {
      if (warned.has(key) || warned.size > MAX_WARNINGS) return;
      warned.add(key);
      if (warned.size <= MAX_WARNINGS) return this.log.warn({ remote, ...extra }, msg);
      this.log.warn({ remote }, `more than ${MAX_WARNINGS} kinds of problem from this controller: no more are logged`);
    };
    // A frame refused before its robot is known counts for every robot this socket serves.
    const droppedHere = (problem: FrameProblem) => {
      for (const [robot, s] of this.byRobot) if (s === ws) this.on.dropped(robot, problem);
    };
    ws.on('message', (data, isBinary) => {
      if (isBinary) {
        const bytes = Array.isArray(data) ? Buffer.concat(data) : Buffer.isBuffer(data) ? data : Buffer.from(data);
        const frame = decodeCameraFrame(bytes);
        if (!frame.ok) return droppedHere({ code: 'invalid_meta', detail: frame.message });
        if (!this.on.accepts(frame.value.robot) || this.byRobot.get(frame.value.robot) !== ws)
          return warn(`frame:${frame.value.robot}`, 'camera frame for a robot this socket does not serve: ignored', {
            robot: frame.value.robot,
          });
        return this.on.frame(frame.value.robot, frame.value);
      }
      // A text envelope is bounded like an MQTT message: a frame-sized one is not parsed.
      const bytes = Array.isArray(data)
        ? data.reduce((n, b) => n + b.length, 0)
        : Buffer.isBuffer(data)
          ? data.length
          : data.byteLength;
      if (bytes > MAX_MESSAGE_BYTES) {
        const why = `envelope: ${oversize(bytes)}`;
        for (const [robot, s] of this.byRobot) if (s === ws) this.on.invalid(robot, why);
        return warn('oversize', 'oversized envelope from a controller: dropped unread', { err: why });
      }
      const env = decodeEnvelope(data.toString(), 'controller');
      if (!env.ok)
        return warn(`invalid:${env.message.slice(0, 60)}`, 'invalid envelope from a controller: ignored', {
          err: env.message,
        });
      const robot = env.value.robot!;
      if (!this.on.accepts(robot))
        return warn(`robot:${robot}`, 'controller announced a robot that is not served over WebSocket: ignored', {
          robot,
        });
      const holder = this.byRobot.get(robot);
      if (holder !== ws) {
        // One socket per robot: another socket's envelope would redirect the robot's commands
        // (stops included) away from the controller that runs it. Refused until that socket closes.
        if (holder && holder.readyState === holder.OPEN) {
          warn(`taken:${robot}`, 'controller WebSocket refused: its robot is served by another open socket', { robot });
          return ws.close(WS_POLICY_VIOLATION, `robot ${robot}: served by another open socket (one socket per robot)`);
        }
        if (holder) this.release(robot);
        this.byRobot.set(robot, ws);
        this.log.info({ robot, remote }, 'controller connected over WebSocket');
      }
      if (env.value.type === 'sim_scene') return this.on.scene(robot, env.value.payload as SimSceneMsg);
      this.on.message(
        robot,
        env.value.type as ControllerMessage,
        env.value.payload as MessageBySuffix[ControllerMessage],
      );
    });
    ws.once('close', () => {
      this.sockets.delete(ws);
      for (const [robot, s] of this.byRobot) if (s === ws) this.release(robot);
    });
    ws.on('error', (err: Error & { code?: string }) => {
      // ws closes the socket (1009) on a message above maxPayload without reading it.
      if (err.code === 'WS_ERR_UNSUPPORTED_MESSAGE_LENGTH') droppedHere({ code: 'oversize', detail: err.message });
      this.log.debug({ err: err.message }, 'controller WebSocket error');
    });
  }

  /** The robot's socket is gone (closed, or closing when another socket announced the robot): offline. */
  private release(robot: string): void {
    this.byRobot.delete(robot);
    this.log.info({ robot }, 'controller WebSocket closed');
    this.on.closed(robot);
  }

  /** Sends one command envelope to the socket serving `robot`; returns why not, or null. */
  send<K extends EnvelopeType>(robot: string, type: K, payload: MessageBySuffix[K]): string | null {
    const ws = this.byRobot.get(robot);
    if (!ws || ws.readyState !== ws.OPEN) return `controller ${robot} is not connected over WebSocket`;
    ws.send(encodeEnvelope(type, robot, payload));
    return null;
  }

  /** The heartbeat goes to every controller socket. */
  heartbeat(payload: MessageBySuffix['heartbeat']): void {
    const text = encodeEnvelope('heartbeat', null, payload);
    for (const ws of this.sockets) if (ws.readyState === ws.OPEN) ws.send(text);
  }

  close(): void {
    for (const ws of this.sockets) ws.close(1001, 'daemon stopping');
  }
}
