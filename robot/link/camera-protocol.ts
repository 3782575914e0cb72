// Camera frames (docs/protocol.md, "Camera frames"): topics, metadata and its validation, MQTT 5
// user properties, and the binary WebSocket layout `u32 BE header length | JSON header | image`.
import { type Issue, formatIssues } from '../common/validation/issue.js';
import { compileSchema } from '../common/validation/json-schema.js';
import { parsePayload } from './controller-link.js';
import { ROBOT_ID_PATTERN } from './protocol.js';
import { CAMERA_NAME_PATTERN, cameraHeaderSchema, cameraMetaSchema } from './protocol-schemas.js';
import type { Checked } from './protocol-validate.js';

export type CameraKind = 'color' | 'depth';
export type CameraEncoding = 'jpeg' | 'png';

/** A frame's metadata as a controller gives it to sendFrame (the wire form adds `v: 1`). */
export interface FrameMeta {
  seq: number;
  /** Controller clock at capture (s). */
  time: number;
  /** color (default) or depth: a 16-bit grayscale PNG of distances in depth_scale units. */
  kind?: CameraKind;
  encoding: CameraEncoding;
  width: number;
  height: number;
  /** Pinhole intrinsics in pixels. */
  intrinsics?: { fx: number; fy: number; cx: number; cy: number };
  /** Parent-frame-from-optical-frame pose: [x, y, z, qx, qy, qz, qw] (m). */
  extrinsics?: { frame: string; pose: number[] };
  /** Metres per depth unit (depth only; 0.001 when absent: millimetres). */
  depth_scale?: number;
}

export type CameraMeta = FrameMeta & { v: 1 };

export const CONTENT_TYPES: Record<CameraEncoding, string> = { jpeg: 'image/jpeg', png: 'image/png' };
export const DEFAULT_DEPTH_SCALE = 0.001;
/** Largest JSON header of a binary WebSocket frame. */
export const MAX_BINARY_HEADER = 64 * 1024;

/** `<base>/robots/<id>/cameras/<name>[/depth]`: the image; `…/meta` after it: the MQTT 3.1.1 sidecar. */
export function cameraTopic(base: string, robot: string, camera: string, kind: CameraKind = 'color'): string {
  return `${base}/robots/${robot}/cameras/${camera}${kind === 'depth' ? '/depth' : ''}`;
}

export const cameraMetaTopic = (base: string, robot: string, camera: string, kind: CameraKind = 'color') =>
  `${cameraTopic(base, robot, camera, kind)}/meta`;

/** Every camera topic of every robot (the daemon's subscription). */
export const cameraFilter = (base: string) => `${base}/robots/+/cameras/#`;

export interface CameraTopic {
  robot: string;
  camera: string;
  kind: CameraKind;
  /** The JSON sidecar rather than the image. */
  meta: boolean;
}

const CAMERA_TOPIC_LEVELS = new Map<string, { kind: CameraKind; meta: boolean }>([
  ['', { kind: 'color', meta: false }],
  ['meta', { kind: 'color', meta: true }],
  ['depth', { kind: 'depth', meta: false }],
  ['depth/meta', { kind: 'depth', meta: true }],
]);

/** A controller's publish grants for its cameras: exactly the four topic shapes, no deeper topic. */
export const cameraGrants = (base: string, robot: string) =>
  [...CAMERA_TOPIC_LEVELS.keys()].map((rest) => `${base}/robots/${robot}/cameras/+${rest ? `/${rest}` : ''}`);

const ROBOT_ID = new RegExp(ROBOT_ID_PATTERN);
const CAMERA_NAME = new RegExp(CAMERA_NAME_PATTERN);

/** Splits a camera topic; null for any other topic (or a robot id or camera name out of pattern). */
export function parseCameraTopic(base: string, topic: string): CameraTopic | null {
  const prefix = `${base}/robots/`;
  if (!topic.startsWith(prefix)) return null;
  const [robot, cameras, camera, ...rest] = topic.slice(prefix.length).split('/');
  const at = CAMERA_TOPIC_LEVELS.get(rest.join('/'));
  if (cameras !== 'cameras' || !at || !ROBOT_ID.test(robot ?? '') || !CAMERA_NAME.test(camera ?? '')) return null;
  return { robot: robot!, camera: camera!, ...at };
}

const checkMeta = compileSchema(cameraMetaSchema);
const checkHeader = compileSchema(cameraHeaderSchema);

const fail = <T>(root: string, issues: Issue[]): Checked<T> => ({
  ok: false,
  issues,
  message: formatIssues(issues, { root }),
});

/** Validates frame metadata; `kind` is the stream's kind when the transport names it (MQTT topic). */
export function validateCameraMeta(v: unknown, kind?: CameraKind): Checked<CameraMeta> {
  const issues = checkMeta(v);
  if (issues.length) return fail('meta', issues);
  const m = v as CameraMeta;
  const k = m.kind ?? 'color';
  if (kind !== undefined && k !== kind)
    issues.push({ path: 'kind', rule: `must be "${kind}" on this topic`, value: m.kind });
  if (k === 'depth' && m.encoding !== 'png')
    issues.push({ path: 'encoding', rule: 'must be "png" for a depth image (16-bit grayscale)', value: m.encoding });
  if (k !== 'depth' && m.depth_scale !== undefined)
    issues.push({ path: 'depth_scale', rule: 'is only for depth images', value: m.depth_scale });
  return issues.length ? fail('meta', issues) : { ok: true, value: m };
}

const NUMERIC = new Set(['v', 'seq', 'time', 'width', 'height', 'depth_scale']);
const INTRINSICS = ['fx', 'fy', 'cx', 'cy'] as const;

/** MQTT 5 user properties of a frame: flat text keys (intrinsics fx…cy; extrinsics frame, pose as JSON). */
export function metaToUserProperties(meta: FrameMeta): Record<string, string> {
  const { intrinsics, extrinsics, ...flat } = { v: 1, ...meta };
  const props: Record<string, string> = {};
  for (const [k, x] of Object.entries(flat)) props[k] = String(x);
  for (const k of INTRINSICS) if (intrinsics) props[k] = String(intrinsics[k]);
  if (extrinsics) Object.assign(props, { frame: extrinsics.frame, pose: JSON.stringify(extrinsics.pose) });
  return props;
}

/** The metadata object user properties describe (validate it next); unparsable numbers stay text. */
export function metaFromUserProperties(props: Record<string, string | string[]>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const intrinsics: Record<string, unknown> = {};
  const extrinsics: Record<string, unknown> = {};
  const num = (s: string) => (s.trim() !== '' && Number.isFinite(Number(s)) ? Number(s) : s);
  for (const [k, raw] of Object.entries(props)) {
    const s = Array.isArray(raw) ? raw.join(',') : raw;
    if (INTRINSICS.includes(k as never)) intrinsics[k] = num(s);
    else if (k === 'frame') extrinsics.frame = s;
    else if (k === 'pose') extrinsics.pose = parsePayload(s);
    else out[k] = NUMERIC.has(k) ? num(s) : s;
  }
  if (Object.keys(intrinsics).length) out.intrinsics = intrinsics;
  if (Object.keys(extrinsics).length) out.extrinsics = extrinsics;
  return out;
}

/** One binary WebSocket message: 4-byte big-endian header length, the UTF-8 JSON header, the body. */
export function encodeBinary(header: unknown, body: Buffer): Buffer {
  const json = Buffer.from(JSON.stringify(header), 'utf8');
  const len = Buffer.alloc(4);
  len.writeUInt32BE(json.length);
  return Buffer.concat([len, json, body]);
}

/** Splits a binary message; the header is parsed JSON, not yet validated. */
export function decodeBinary(buf: Buffer): Checked<{ header: unknown; body: Buffer }> {
  const bad = (rule: string, value: unknown) => fail<never>('binary', [{ path: 'header', rule, value }]);
  if (buf.length < 4) return bad('must start with a 4-byte big-endian header length', buf.length);
  const n = buf.readUInt32BE(0);
  if (n > MAX_BINARY_HEADER || n > buf.length - 4)
    return bad(`length must be at most ${Math.min(MAX_BINARY_HEADER, buf.length - 4)} bytes`, n);
  const header = parsePayload(buf.subarray(4, 4 + n).toString('utf8'));
  return { ok: true, value: { header, body: buf.subarray(4 + n) } };
}

export interface CameraFrame {
  robot: string;
  camera: string;
  meta: CameraMeta;
  image: Buffer;
}

export function encodeCameraFrame(robot: string, camera: string, meta: FrameMeta, image: Buffer): Buffer {
  return encodeBinary({ type: 'camera', robot, camera, meta: { v: 1, ...meta } }, image);
}

/** A controller's binary WebSocket frame: header and metadata validated, the image not yet checked. */
export function decodeCameraFrame(buf: Buffer): Checked<CameraFrame> {
  const split = decodeBinary(buf);
  if (!split.ok) return split;
  const issues = checkHeader(split.value.header);
  if (issues.length) return fail('camera frame header', issues);
  const h = split.value.header as { robot: string; camera: string; meta: unknown };
  const meta = validateCameraMeta(h.meta);
  if (!meta.ok) return { ...meta, message: `camera frame ${meta.message}` };
  return { ok: true, value: { robot: h.robot, camera: h.camera, meta: meta.value, image: split.value.body } };
}
