// Recorded robot actions: a JSONL (one object a line) or CSV (header row, then one row a sample)
// log with the fields below; every error names the file, the line and the field.
import { readFile } from 'node:fs/promises';
import { extname } from 'node:path';
import { ContextInputError } from './types.js';

/** One sample of one arm. Poses are [x, y, z, qx, qy, qz, qw] like the tools' pose_xyzquat. */
export interface ActionSample {
  line: number;
  /** Seconds on the demonstration video's clock. */
  t: number;
  arm: string;
  joints?: number[];
  tcp?: number[];
  /** Measured and commanded gripper opening: 0 = closed, 1 = open. */
  gripper?: number;
  gripperCmd?: number;
  jointCmd?: number[];
  segment?: string;
}

const FIELDS = ['t', 'arm', 'joints', 'tcp', 'gripper', 'gripper_cmd', 'joint_cmd', 'segment'];
const ARRAY_FIELDS = new Set(['joints', 'tcp', 'joint_cmd']);
const NUMBER = /^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/;

type Raw = Record<string, unknown>;

/** Reads a .jsonl or .csv action log; `field` names the input field that gave its path. */
export async function readActionLog(path: string, field: string): Promise<ActionSample[]> {
  const ext = extname(path).toLowerCase();
  if (ext !== '.jsonl' && ext !== '.csv')
    throw new ContextInputError(`${field}: action log ${path} must end in .jsonl or .csv`, field, path);
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (e) {
    throw new ContextInputError(`${field}: cannot read action log ${path} (${(e as Error).message})`, field, path);
  }
  return parseActionLog(text, path, ext === '.csv' ? 'csv' : 'jsonl', field);
}

export function parseActionLog(text: string, file: string, format: 'jsonl' | 'csv', field: string): ActionSample[] {
  const fail = (line: number, what: string, message: string): never => {
    throw new ContextInputError(`${file}:${line}: ${what}: ${message}`, field, file, line);
  };
  const lines = text.split(/\r?\n/);
  const out: ActionSample[] = [];
  let header: string[] | null = null;
  for (let i = 0; i < lines.length; i++) {
    const body = lines[i]!.trim();
    if (body === '') continue;
    const line = i + 1;
    let raw: Raw;
    if (format === 'jsonl') {
      try {
        raw = JSON.parse(body) as Raw;
      } catch (e) {
        return fail(line, 'line', `not JSON (${(e as Error).message})`);
      }
      if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
        return fail(line, 'line', 'expected a JSON object');
      const unknown = Object.keys(raw).find((k) => !FIELDS.includes(k));
      if (unknown !== undefined) fail(line, `field "${unknown}"`, `unknown field (known: ${FIELDS.join(', ')})`);
    } else if (header === null) {
      header = csvHeader(body, (what, message) => fail(line, what, message));
      continue;
    } else {
      raw = csvRow(header, body, (what, message) => fail(line, what, message));
    }
    const sample = toSample(raw, line, (what, message) => fail(line, what, message));
    const prev = out[out.length - 1];
    if (prev && sample.t < prev.t)
      fail(line, 'field "t"', `${sample.t} is earlier than ${prev.t} on line ${prev.line} (times must not decrease)`);
    out.push(sample);
  }
  if (format === 'csv' && header === null) fail(1, 'header', 'the CSV has no header row');
  return out;
}

type Fail = (what: string, message: string) => never;

function csvHeader(body: string, fail: Fail): string[] {
  const cols = body.split(',').map((c) => c.trim());
  const seen = new Set<string>();
  for (const c of cols) {
    const [name, idx, extra] = c.split('.');
    const known = ARRAY_FIELDS.has(name!) ? idx !== undefined && /^\d+$/.test(idx) && extra === undefined : c === name;
    if (!FIELDS.includes(name!) || !known)
      fail(
        `column "${c}"`,
        `unknown column (known: t, arm, joints.N, tcp.0..6, gripper, gripper_cmd, joint_cmd.N, segment)`,
      );
    if (seen.has(c)) fail(`column "${c}"`, 'repeated');
    seen.add(c);
  }
  if (!seen.has('t')) fail('column "t"', 'missing (each row needs a time)');
  for (const a of ARRAY_FIELDS) {
    const n = cols.filter((c) => c.startsWith(`${a}.`)).length;
    for (let k = 0; k < n; k++)
      if (!seen.has(`${a}.${k}`)) fail(`column "${a}.${k}"`, `missing (${a} columns are 0..N)`);
  }
  return cols;
}

function csvRow(header: string[], body: string, fail: Fail): Raw {
  const cells = body.split(',').map((c) => c.trim());
  if (cells.length !== header.length) fail('row', `${cells.length} cells, the header has ${header.length}`);
  const raw: Raw = {};
  header.forEach((col, k) => {
    const cell = cells[k]!;
    const value = cell === '' ? undefined : NUMBER.test(cell) ? Number(cell) : cell;
    const [name, idx] = col.split('.');
    if (idx === undefined) {
      if (value !== undefined) raw[name!] = col === 'arm' || col === 'segment' ? cell : value;
      return;
    }
    const arr = (raw[name!] ?? []) as unknown[];
    arr[Number(idx)] = value;
    raw[name!] = arr;
  });
  // A vector given in no cell is absent; one given in some cells only is an error (toSample names the hole).
  for (const a of ARRAY_FIELDS)
    if (Array.isArray(raw[a]) && (raw[a] as unknown[]).every((v) => v === undefined)) delete raw[a];
  return raw;
}

function toSample(raw: Raw, line: number, fail: Fail): ActionSample {
  const num = (name: string, v: unknown, lo = -Infinity, hi = Infinity): number => {
    if (typeof v !== 'number' || !Number.isFinite(v))
      return fail(`field "${name}"`, `expected a number, got ${show(v)}`);
    if (v < lo || v > hi) fail(`field "${name}"`, `${v} is outside [${lo}, ${hi}]`);
    return v;
  };
  const vec = (name: string, v: unknown, length?: number): number[] | undefined => {
    if (v === undefined) return undefined;
    if (!Array.isArray(v) || v.length === 0)
      return fail(`field "${name}"`, `expected an array of numbers, got ${show(v)}`);
    if (length !== undefined && v.length !== length)
      fail(`field "${name}"`, `expected ${length} numbers [x, y, z, qx, qy, qz, qw], got ${v.length}`);
    return Array.from(v, (x, k) => num(`${name}.${k}`, x));
  };
  if (raw.t === undefined) fail('field "t"', 'missing (each sample needs a time in seconds)');
  const s: ActionSample = { line, t: num('t', raw.t), arm: 'arm' };
  if (raw.arm !== undefined) {
    if (typeof raw.arm !== 'string' || raw.arm === '')
      fail('field "arm"', `expected an arm name, got ${show(raw.arm)}`);
    s.arm = raw.arm as string;
  }
  const joints = vec('joints', raw.joints);
  if (joints) s.joints = joints;
  const tcp = vec('tcp', raw.tcp, 7);
  if (tcp) s.tcp = tcp;
  if (raw.gripper !== undefined) s.gripper = num('gripper', raw.gripper, 0, 1);
  if (raw.gripper_cmd !== undefined) s.gripperCmd = num('gripper_cmd', raw.gripper_cmd, 0, 1);
  const jointCmd = vec('joint_cmd', raw.joint_cmd);
  if (jointCmd) s.jointCmd = jointCmd;
  if (raw.segment !== undefined) {
    if (typeof raw.segment !== 'string' && typeof raw.segment !== 'number')
      fail('field "segment"', `expected a name or number, got ${show(raw.segment)}`);
    s.segment = String(raw.segment);
  }
  return s;
}

function show(v: unknown): string {
  return v === undefined ? 'nothing' : JSON.stringify(v);
}
