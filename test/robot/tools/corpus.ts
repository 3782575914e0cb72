// Seeded generator of malformed and adversarial tool calls: valid calls rendered in every reply
// form, then mutated; each case carries the pattern its rejection message must match.
import { Prng } from '../../../robot/common/prng.js';

export type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
export interface Base {
  arms: string[];
  name: string;
  args: { [k: string]: Json };
}
export interface Case {
  kind: string;
  arms: string[];
  input: unknown;
  expect: RegExp;
}

const pose = (x: number, y: number, z: number): Json => ({ pose_xyzquat: [x, y, z, 0, 0, 0.3826834, 0.9238795] });
const SINGLE = ['arm'];
const DUAL = ['left', 'right'];

export const BASES: Base[] = [
  { arms: SINGLE, name: 'move_to', args: { target: pose(0.3, 0.1, 0.2), note: 'approach' } },
  { arms: SINGLE, name: 'move_eef_chunk', args: { poses: [pose(0.3, 0.1, 0.2), pose(0.3, 0.1, 0.15)] } },
  { arms: SINGLE, name: 'check_path', args: { poses: [pose(0.25, -0.1, 0.3)] } },
  { arms: SINGLE, name: 'set_gripper', args: { gripper: 0.4 } },
  { arms: SINGLE, name: 'done', args: { summary: 'placed the cup', hindsight: 'slow' } },
  { arms: DUAL, name: 'move_to', args: { target: { left: pose(0.3, 0.2, 0.2), right: null } } },
  {
    arms: DUAL,
    name: 'move_eef_chunk',
    args: {
      poses: [
        { left: pose(0.3, 0.2, 0.2), right: pose(0.3, -0.2, 0.2) },
        { left: null, right: pose(0.3, -0.2, 0.1) },
      ],
    },
  },
  { arms: DUAL, name: 'set_gripper', args: { positions: { left: 0, right: null } } },
];
export const NO_ARGS: Base[] = [
  { arms: SINGLE, name: 'get_state', args: {} },
  { arms: DUAL, name: 'stop', args: {} },
];

const FORMS = ['hermes', 'bare', 'fenced', 'openai', 'openai-object', 'object'] as const;
type Form = (typeof FORMS)[number];
const TEXT_FORMS: Form[] = ['hermes', 'bare', 'fenced'];

export function render(name: string, args: Json, form: Form): unknown {
  const body = JSON.stringify({ name, arguments: args });
  switch (form) {
    case 'hermes':
      return `<tool_call>\n${body}\n</tool_call>`;
    case 'bare':
      return body;
    case 'fenced':
      return '```json\n' + body + '\n```';
    case 'openai':
      return {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'call_1', type: 'function', function: { name, arguments: JSON.stringify(args) } }],
      };
    case 'openai-object':
      return { tool_calls: [{ id: 'call_1', type: 'function', function: { name, arguments: args } }] };
    case 'object':
      return { name, arguments: args };
  }
}

interface Node {
  path: string;
  parent: Json[] | { [k: string]: Json };
  key: string | number;
  value: Json;
  /** null is a valid value here (an arm or gripper held). */
  nullable: boolean;
  required: boolean;
}

/** Every value below the arguments, with a printable path as the validator spells it. */
function nodes(v: Json, path: string, out: Node[] = []): Node[] {
  if (Array.isArray(v))
    v.forEach((c, i) => {
      out.push({ path: `${path}[${i}]`, parent: v, key: i, value: c, nullable: false, required: true });
      nodes(c, `${path}[${i}]`, out);
    });
  else if (v !== null && typeof v === 'object')
    for (const [k, c] of Object.entries(v)) {
      const nullable = /^(left|right)$/.test(k);
      out.push({
        path: `${path}.${k}`,
        parent: v,
        key: k,
        value: c,
        nullable,
        required: k !== 'note' && k !== 'hindsight',
      });
      nodes(c, `${path}.${k}`, out);
    }
  return out;
}

const esc = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const EXTRA_KEYS = [
  'speed',
  'frame',
  'id',
  'Target',
  'tаrget',
  'spéed',
  '__proto__',
  'x_vendor',
  '',
  ' ',
  'pose',
  'left_arm',
];
const WRONG: Json[] = ['abc', '0.5', true, false, {}, [], [[0.1, 0.2]], [1, 2, 3]];
const NAN_STRINGS = ['NaN', 'nan', 'Infinity', '-Infinity', 'inf', '-inf', ' NaN '];
const PREFIXES = [
  'Sure! ',
  "I'll move the arm now.\n",
  'Okay:',
  '好的，',
  'Thought: reach the cup\n',
  '</think>',
  'Action: ',
];
const SUFFIXES = [' Done.', '\nLet me know if that works.', ' 👍', '\n<tool_call>'];

/** Generates `n` rejected cases from seed; kinds are drawn uniformly. */
export function generate(seed: number, n: number): Case[] {
  const r = new Prng(seed);
  const pick = <T>(a: readonly T[]): T => a[r.int(a.length)]!;
  const out: Case[] = [];
  const mutators: Record<string, () => Case | null> = {
    drop_required() {
      const b = pick(BASES);
      const args = structuredClone(b.args);
      const ns = nodes(args, b.name).filter((x) => x.required && !Array.isArray(x.parent));
      const x = pick(ns);
      delete (x.parent as Record<string, Json>)[x.key as string];
      return {
        kind: 'drop_required',
        arms: b.arms,
        input: render(b.name, args, pick(FORMS)),
        expect: new RegExp(`${esc(x.path)}: is required`),
      };
    },
    extra_field() {
      const b = pick([...BASES, ...NO_ARGS]);
      const args = structuredClone(b.args);
      const objects = [{ path: b.name, value: args as Json }, ...nodes(args, b.name)].filter(
        (x) => x.value !== null && typeof x.value === 'object' && !Array.isArray(x.value),
      );
      const o = pick(objects);
      const key = pick(EXTRA_KEYS);
      if (Object.hasOwn(o.value as object, key)) return null;
      Object.defineProperty(o.value, key, {
        value: pick([1, 'x', null, [0]]),
        enumerable: true,
        writable: true,
        configurable: true,
      });
      const at = /^[\p{L}_$][\p{L}\p{N}_$-]*$/u.test(key) ? `${o.path}.${key}` : `${o.path}[${JSON.stringify(key)}]`;
      return {
        kind: 'extra_field',
        arms: b.arms,
        input: render(b.name, args, pick(FORMS)),
        // Prototype names are refused as reserved keys before the schema's own rules.
        expect: new RegExp(`${esc(at)}: ${key === '__proto__' ? 'is a reserved key' : 'is not a known field'}`),
      };
    },
    wrong_type() {
      const b = pick(BASES);
      const args = structuredClone(b.args);
      const x = pick(nodes(args, b.name));
      const isString = typeof x.value === 'string';
      const choices = WRONG.filter((w) => !(isString && typeof w === 'string'));
      if (!x.nullable && typeof x.value === 'number') choices.push(null);
      const w = structuredClone(pick(choices));
      (x.parent as Record<string, Json>)[x.key as string] = w;
      return {
        kind: 'wrong_type',
        arms: b.arms,
        input: render(b.name, args, pick(FORMS)),
        expect: new RegExp(`${esc(x.path)}(\\[\\d+\\]|\\.[a-z_]+)?: (must (be|have)|is required)`),
      };
    },
    nan_string() {
      const b = pick(BASES);
      const args = structuredClone(b.args);
      const numbers = nodes(args, b.name).filter((n) => typeof n.value === 'number');
      if (numbers.length === 0) return null;
      const x = pick(numbers);
      (x.parent as Record<string, Json>)[x.key as string] = pick(NAN_STRINGS);
      return {
        kind: 'nan_string',
        arms: b.arms,
        input: render(b.name, args, pick(FORMS)),
        expect: new RegExp(
          `${esc(x.path)}: must be a finite number( or null)?; NaN and ±Infinity are not allowed, not even as strings`,
        ),
      };
    },
    nan_literal() {
      const b = pick(BASES);
      const text = render(b.name, b.args, pick(TEXT_FORMS)) as string;
      const nums = [...text.matchAll(/(?<=[:,[])-?\d+(\.\d+)?(?=[,\]}])/g)];
      if (nums.length === 0) return null;
      const m = pick(nums);
      const lit = pick(['NaN', 'Infinity', '-Infinity', '-NaN', 'nan', 'inf']);
      const input = text.slice(0, m.index) + lit + text.slice(m.index! + m[0].length);
      return {
        kind: 'nan_literal',
        arms: b.arms,
        input,
        expect: new RegExp(`${esc(lit)} at position \\d+ is not valid JSON: numbers must be finite`),
      };
    },
    huge_number() {
      const b = pick(BASES.filter((x) => /move|check/.test(x.name)));
      const text = render(b.name, b.args, pick(TEXT_FORMS)) as string;
      const m = pick([...text.matchAll(/"pose_xyzquat":\[(-?[\d.]+)/g)]);
      const big = pick(['1e400', '-1e999', '1e308', '123456789012', '-9e15']);
      const at = m.index! + m[0].length - m[1]!.length;
      const input = text.slice(0, at) + big + text.slice(at + m[1]!.length);
      const rule =
        Math.abs(Number(big)) === Infinity
          ? 'must be a finite number; NaN and ±Infinity are not allowed'
          : 'must be within ±10 m of the robot base';
      return {
        kind: 'huge_number',
        arms: b.arms,
        input,
        expect: new RegExp(`pose_xyzquat\\[0\\]( \\(x\\))?: ${esc(rule)}`),
      };
    },
    bad_quaternion() {
      const b = pick(BASES.filter((x) => /move|check/.test(x.name)));
      const args = structuredClone(b.args);
      const poses = nodes(args, b.name).filter((x) => x.key === 'pose_xyzquat');
      const x = pick(poses);
      const f = r.next() < 0.5 ? r.uniform(0, 0.985) : r.uniform(1.015, 5);
      const a = x.value as number[];
      for (let i = 3; i < 7; i++) a[i] = a[i]! * f;
      if (r.next() < 0.1) a.fill(0, 3);
      return {
        kind: 'bad_quaternion',
        arms: b.arms,
        input: render(b.name, args, pick(FORMS)),
        expect: new RegExp(`${esc(x.path)}\\[3\\.\\.6\\]: quaternion norm [\\d.e+-]+ is outside \\[0\\.99, 1\\.01\\]`),
      };
    },
    pose_length() {
      const b = pick(BASES.filter((x) => /move|check/.test(x.name)));
      const args = structuredClone(b.args);
      const x = pick(nodes(args, b.name).filter((n) => n.key === 'pose_xyzquat'));
      const a = x.value as number[];
      const k = r.int(6) + 1;
      if (r.next() < 0.5) a.splice(0, k);
      else a.push(...Array.from({ length: k }, () => 0));
      return {
        kind: 'pose_length',
        arms: b.arms,
        input: render(b.name, args, pick(FORMS)),
        expect: new RegExp(`${esc(x.path)}: must have at (least|most) 7 items`),
      };
    },
    gripper_range() {
      const b = pick(BASES.filter((x) => x.name === 'set_gripper'));
      const args = structuredClone(b.args);
      const x = pick(nodes(args, b.name).filter((n) => typeof n.value === 'number'));
      const v = r.next() < 0.5 ? r.uniform(1.0001, 100) : -r.uniform(0.0001, 100);
      (x.parent as Record<string, Json>)[x.key as string] = v;
      return {
        kind: 'gripper_range',
        arms: b.arms,
        input: render(b.name, args, pick(FORMS)),
        expect: new RegExp(`${esc(x.path)}: must be ${v > 1 ? '≤ 1' : '≥ 0'}`),
      };
    },
    empty_or_all_held() {
      const b = pick(BASES.filter((x) => x.arms.length === 2 || /chunk|check/.test(x.name)));
      const args = structuredClone(b.args);
      if (b.name === 'set_gripper') {
        args.positions = { left: null, right: null };
        return {
          kind: 'empty_or_all_held',
          arms: b.arms,
          input: render(b.name, args, pick(FORMS)),
          expect: /set_gripper\.positions: at least one gripper must be set/,
        };
      }
      if (b.name === 'move_to') {
        args.target = { left: null, right: null };
        return {
          kind: 'empty_or_all_held',
          arms: b.arms,
          input: render(b.name, args, pick(FORMS)),
          expect: /move_to\.target: at least one arm must have a pose/,
        };
      }
      args.poses = [];
      return {
        kind: 'empty_or_all_held',
        arms: b.arms,
        input: render(b.name, args, pick(FORMS)),
        expect: new RegExp(`${b.name}\\.poses: must have at least 1 item`),
      };
    },
    unknown_tool() {
      const b = pick([...BASES, ...NO_ARGS]);
      const n = b.name;
      const i = r.int(n.length);
      const name = pick([
        n.slice(0, i) + n.slice(i + 1),
        n.toUpperCase(),
        n.replace('_', '-'),
        n.slice(0, i) + '\u200b' + n.slice(i),
        n.replace('o', 'о'),
        `${n}s`,
        'functions.' + n,
        'move',
        'grasp',
        '',
        'rm -rf /',
        '＿'.repeat(3),
      ]);
      if (name === n) return null;
      return {
        kind: 'unknown_tool',
        arms: b.arms,
        input: render(name, b.args, pick(FORMS)),
        expect: new RegExp(`unknown tool ${esc(JSON.stringify(name))}; the tools are move_to`),
      };
    },
    text_before() {
      const b = pick([...BASES, ...NO_ARGS]);
      const input = pick(PREFIXES) + (render(b.name, b.args, pick(TEXT_FORMS)) as string);
      return {
        kind: 'text_before',
        arms: b.arms,
        input,
        expect: /text before the tool call \(".+"\); reply with only the tool call/,
      };
    },
    text_after() {
      const b = pick([...BASES, ...NO_ARGS]);
      const suffix = pick(SUFFIXES);
      const input = (render(b.name, b.args, pick(TEXT_FORMS)) as string) + suffix;
      return {
        kind: 'text_after',
        arms: b.arms,
        input,
        expect: suffix.includes('<tool_call>')
          ? /text (before|after) the tool call|tool calls in one reply/
          : /text after the tool call/,
      };
    },
    several_calls() {
      const b = pick([...BASES, ...NO_ARGS]);
      const c = pick([...BASES, ...NO_ARGS].filter((x) => x.arms === b.arms));
      const form = pick(['hermes', 'bare', 'fenced', 'openai'] as const);
      if (form === 'openai') {
        const one = render(b.name, b.args, 'openai') as { tool_calls: unknown[] };
        const two = render(c.name, c.args, 'openai') as { tool_calls: unknown[] };
        return {
          kind: 'several_calls',
          arms: b.arms,
          input: { tool_calls: [...one.tool_calls, ...two.tool_calls] },
          expect: /2 tool calls in one reply; send exactly one tool call per reply/,
        };
      }
      const sep = pick(['', '\n', ' ', '\n\n']);
      const input = (render(b.name, b.args, form) as string) + sep + (render(c.name, c.args, form) as string);
      return {
        kind: 'several_calls',
        arms: b.arms,
        input,
        expect: /(tool calls|more than one JSON object) in (one|the) reply; send exactly one tool call per reply/,
      };
    },
    duplicate_key() {
      const b = pick(BASES);
      const text = render(b.name, b.args, pick(TEXT_FORMS)) as string;
      const keys = [...text.matchAll(/"([a-z_]+)":/g)];
      const m = pick(keys);
      const close = m[1] === 'name' ? '"stop",' : '0,';
      const input = text.slice(0, m.index) + m[0] + close + text.slice(m.index!);
      return {
        kind: 'duplicate_key',
        arms: b.arms,
        input,
        expect: new RegExp(`duplicate key "${m[1]}" at position \\d+`),
      };
    },
    truncated() {
      const b = pick([...BASES, ...NO_ARGS]);
      const form = pick(TEXT_FORMS);
      const text = render(b.name, b.args, form) as string;
      const start = text.indexOf('{');
      const end = text.lastIndexOf('}');
      const input = text.slice(0, start + 1 + r.int(end - start));
      return { kind: 'truncated', arms: b.arms, input, expect: /JSON ends early at position \d+ \(truncated\?\)/ };
    },
    array_of_decisions() {
      const b = pick([...BASES, ...NO_ARGS]);
      const one = { name: b.name, arguments: b.args };
      const list = Array.from({ length: 1 + r.int(3) }, () => one);
      const input = pick([
        JSON.stringify(list),
        `<tool_call>${JSON.stringify(list)}</tool_call>`,
        '```json\n' + JSON.stringify(list) + '\n```',
        list,
      ]);
      return {
        kind: 'array_of_decisions',
        arms: b.arms,
        input,
        expect: new RegExp(
          `got an array of ${list.length} items?; send one tool call object, not an array of decisions`,
        ),
      };
    },
    bad_arguments_string() {
      const b = pick([...BASES, ...NO_ARGS]);
      const good = JSON.stringify(b.args);
      const bad = pick([good.slice(0, -1), good.replace(/"/g, "'"), `${good},`, `"${good}"`, good.replace(':', '=')]);
      if (bad === good) return null;
      const input = { tool_calls: [{ id: 'c', type: 'function', function: { name: b.name, arguments: bad } }] };
      return {
        kind: 'bad_arguments_string',
        arms: b.arms,
        input,
        expect: /arguments is (not valid JSON: .+|a JSON string inside a string)/,
      };
    },
    deep_nesting() {
      const b = pick(BASES.filter((x) => /move|check/.test(x.name)));
      const depth = 40 + r.int(200);
      const input = `{"name":"${b.name}","arguments":{"target":${'['.repeat(depth)}1${']'.repeat(depth)}}}`;
      return { kind: 'deep_nesting', arms: b.arms, input, expect: /JSON nested deeper than 32 levels/ };
    },
    control_character() {
      const b = pick(BASES.filter((x) => x.name === 'done' || x.args.note !== undefined));
      const text = JSON.stringify({ name: b.name, arguments: b.args });
      const at = text.lastIndexOf('"') - 1;
      const input = text.slice(0, at) + pick(['\n', '\t', '\u0001', '\r']) + text.slice(at);
      return {
        kind: 'control_character',
        arms: b.arms,
        input,
        expect: /control character U\+00[0-9a-f]{2} inside the string/,
      };
    },
    wrong_call_shape() {
      const b = pick([...BASES, ...NO_ARGS]);
      const input = pick<unknown>([
        JSON.stringify({ tool: b.name, arguments: b.args }),
        JSON.stringify({ name: b.name, arguments: b.args, parameters: b.args }),
        JSON.stringify({ function: b.name, args: b.args }),
        JSON.stringify({ name: 7, arguments: b.args }),
        '"move_to"',
        42,
        null,
        { tool_calls: [{ type: 'function', function: { arguments: '{}' } }] },
        { tool_calls: [{ type: 'code', function: { name: b.name, arguments: '{}' } }] },
      ]);
      return {
        kind: 'wrong_call_shape',
        arms: b.arms,
        input,
        expect:
          /(no tool call found|unexpected field|has no "name"|"name" must be|not both|must be a JSON object|expected a tool call|function\.name must be|type must be "function")/,
      };
    },
  };
  const kinds = Object.keys(mutators);
  while (out.length < n) {
    const kind = kinds[out.length % kinds.length]!;
    const c = mutators[kind]!();
    if (c) out.push(c);
  }
  return out;
}
