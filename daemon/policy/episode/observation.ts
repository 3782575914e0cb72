// One decision's observation: the measured state of each arm, the previous tool's result in short,
// operator feedback (marked as such), and the latest frame of each camera scaled to the
// configured longest side. The text is compact JSON with numbers rounded to 6 decimals.
import sharp from 'sharp';
import type { ArmReport, ToolOutcome } from '../../../robot/tools/outcome.js';
import type { ContentPart } from '../providers/types.js';
import type { Frame } from './types.js';

export interface Observation {
  parts: ContentPart[];
  /** The observation's text (what the events record). */
  text: string;
  /** Image ids (records/images/<id>) in the order sent. */
  images: { id: string; camera: string; mime: string; width: number; height: number; bytes: Uint8Array }[];
  state: Record<string, unknown> | null;
}

export interface ObservationInput {
  decision: number;
  arms: Record<string, ArmReport> | undefined;
  previous: { tool: string | null; status: string; reason?: string; message: string } | null;
  feedback: readonly string[];
  frames: readonly Frame[];
  maxSide: number;
  /** Daemon clock now (s), for frame ages. */
  now: number;
}

const r6 = (x: number) => Math.round(x * 1e6) / 1e6;

/** The model's view of each arm: joints, velocities, TCP pose (xyz + quaternion xyzw), gripper. */
export function armView(arms: Record<string, ArmReport>): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(arms).map(([name, a]) => [
      name,
      {
        joint_pos: a.q.map(r6),
        joint_vel: a.dq.map(r6),
        tcp_pose_xyzquat: a.tcp.map(r6),
        gripper: a.gripper === null ? null : r6(a.gripper),
        mode: a.mode,
        ...(a.faults.length ? { faults: a.faults } : {}),
      },
    ]),
  );
}

/** The size a width × height frame is shown to the model at: fitted within maxSide, aspect kept. */
export function shownSize(width: number, height: number, maxSide: number): { width: number; height: number } {
  const scale = Math.min(1, maxSide / Math.max(width, height));
  return { width: Math.max(1, Math.round(width * scale)), height: Math.max(1, Math.round(height * scale)) };
}

/** A frame re-encoded as JPEG when it is larger than maxSide (aspect kept), else as it came. */
export async function fitFrame(
  f: Frame,
  maxSide: number,
): Promise<{ mime: string; bytes: Uint8Array; width: number; height: number }> {
  if (Math.max(f.width, f.height) <= maxSide) return { mime: f.mime, bytes: f.bytes, width: f.width, height: f.height };
  const { width, height } = shownSize(f.width, f.height, maxSide);
  const bytes = await sharp(f.bytes).resize(width, height, { fit: 'fill' }).jpeg({ quality: 85 }).toBuffer();
  return { mime: 'image/jpeg', bytes: new Uint8Array(bytes), width, height };
}

export async function buildObservation(o: ObservationInput): Promise<Observation> {
  const images: Observation['images'] = [];
  for (const f of o.frames) {
    const fit = await fitFrame(f, o.maxSide);
    const ext = fit.mime === 'image/png' ? 'png' : 'jpg';
    images.push({ id: `d${o.decision}-${f.camera}.${ext}`, camera: f.camera, ...fit });
  }
  const state = o.arms ? armView(o.arms) : null;
  const body = {
    decision: o.decision,
    state: state ?? 'no measured state (the controller has not reported yet)',
    previous_result: o.previous,
    images: o.frames.map((f, i) => ({
      camera: f.camera,
      width: images[i]!.width,
      height: images[i]!.height,
      age_s: r6(Math.max(0, o.now - f.time)),
    })),
  };
  const text = `Observation ${JSON.stringify(body)}`;
  const parts: ContentPart[] = o.feedback.map((t) => ({
    type: 'text',
    text: `Operator feedback (from the person supervising this robot; it takes precedence over earlier plans): ${t}`,
  }));
  parts.push({ type: 'text', text });
  for (const img of images)
    parts.push({
      type: 'image',
      image: { mime: img.mime, bytes: img.bytes },
      label: `camera ${img.camera}, decision ${o.decision}`,
    });
  return { parts, text, images, state };
}

/** What the model reads of a tool outcome: everything but the per-arm state (the next observation has it). */
export function outcomeText(o: ToolOutcome): string {
  const { arms, call_id: _id, ...rest } = o;
  const errors = arms
    ? Object.fromEntries(Object.entries(arms).flatMap(([a, r]) => (r.pose_error ? [[a, r.pose_error]] : [])))
    : {};
  return JSON.stringify(Object.keys(errors).length ? { ...rest, pose_error: errors } : rest);
}

/** The short account of the previous result carried in the next observation. */
export function previousOf(
  tool: string | null,
  status: string,
  message: string,
  reason?: string,
): NonNullable<ObservationInput['previous']> {
  return { tool, status, ...(reason ? { reason } : {}), message };
}
