// The embedded Metal library compiled as MSL without a Mac: clang reads params.h, prelude.metal
// and the kernels in the order the addon embeds them (cmake/embed-metal.cmake) for arm64 Apple,
// with test/native/msl/msl-builtins.h forced in front (MSL's keywords as clang address spaces, its
// scalar and vector types, C++ features MSL leaves out poisoned), a declarations-only
// <metal_stdlib> beside it and no C++ standard library, and emits LLVM IR, where each kernel's
// threadgroup arrays are counted against Apple's 32 KB. Kernel arguments are checked against
// MSL's attribute table and the 31-entry buffer table. What the shim compiles as plain C++ but
// Apple's compiler refuses fails here; what only Apple's compiler can tell is in docs/metal.md.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { repoRoot } from '../../daemon/util/repo-root.js';
import { tempDir } from '../helpers/temp.js';
import { findClang } from './helpers/clang.js';

const metalDir = join(repoRoot, 'native', 'metal');
const standIn = join(repoRoot, 'test', 'native', 'msl');

/** The library text as bs::metal::library_source() joins it: params.h, prelude.metal, the rest by name. */
function librarySource(): string {
  const kernels = readdirSync(metalDir)
    .filter((f) => f.endsWith('.metal') && f !== 'prelude.metal')
    .sort();
  return ['params.h', 'prelude.metal', ...kernels]
    .map((f) => `// ---- ${f}\n${readFileSync(join(metalDir, f), 'utf8')}`)
    .join('');
}

/** clang's verdict on `source` as MSL: status, diagnostics, and the LLVM IR it compiles to. */
function compileAsMsl(clang: string, source: string): { status: number | null; output: string; ir: string } {
  const dir = tempDir('bs-msl-');
  try {
    const file = join(dir.path, 'library.metal');
    const ir = join(dir.path, 'library.ll');
    writeFileSync(file, source);
    const r = spawnSync(
      clang,
      [
        '--target=arm64-apple-macos13',
        '-std=c++14',
        '-S',
        '-emit-llvm',
        '-o',
        ir,
        '-nostdinc',
        '-nostdinc++',
        '-fno-exceptions',
        '-fno-rtti',
        '-Wno-unknown-attributes',
        '-isystem',
        standIn,
        '-include',
        join(standIn, 'msl-builtins.h'),
        '-D__METAL_VERSION__=310',
        '-x',
        'c++',
        file,
      ],
      { encoding: 'utf8' },
    );
    return { status: r.status, output: `${r.stdout}${r.stderr}`, ir: r.status === 0 ? readFileSync(ir, 'utf8') : '' };
  } finally {
    dir.remove();
  }
}

// Threadgroup memory a kernel may declare (MTLDevice.maxThreadgroupMemoryLength on Apple GPUs).
const MAX_THREADGROUP_BYTES = 32768;
const IR_BYTES: Record<string, number> = { i8: 1, i16: 2, half: 2, i32: 4, float: 4, i64: 8 };

/** Bytes of an LLVM IR type made of arrays of scalars ([4 x [8 x float]]). */
function irTypeBytes(type: string): number {
  const array = /^\[(\d+) x (.+)\]$/.exec(type);
  if (array) return Number(array[1]) * irTypeBytes(array[2]);
  const bytes = IR_BYTES[type];
  if (bytes === undefined) throw new Error(`threadgroup variable of unsized type ${type}`);
  return bytes;
}

/** Each kernel's threadgroup bytes: its function statics in address space 3 (the builtins' `threadgroup`). */
function threadgroupBytes(ir: string, names: string[]): Map<string, number> {
  const bytes = new Map(names.map((n) => [n, 0]));
  for (const m of ir.matchAll(/^@_ZZ(\d+)(\w+?) = internal addrspace\(3\) global (.+) zeroinitializer/gm)) {
    const name = m[2].slice(0, Number(m[1]));
    const before = bytes.get(name);
    if (before === undefined) throw new Error(`threadgroup variable outside a kernel: ${m[0]}`);
    bytes.set(name, before + irTypeBytes(m[3]));
  }
  return bytes;
}

/** Variables MSL refuses: every program-scope one must be `constant` (address space 2), and a
 *  function's statics exist only as the builtins' `threadgroup` arrays (3). */
function misplacedVariables(ir: string): string[] {
  const bad: string[] = [];
  for (const m of ir.matchAll(/^@([\w.$]+) = (.*?)\b(global|constant) /gm)) {
    const space = /addrspace\((\d+)\)/.exec(m[2])?.[1] ?? '0';
    if (space !== '2' && space !== '3') bad.push(`${m[1]} (address space ${space})`);
  }
  return bad;
}

test('the embedded Metal library compiles as MSL (address spaces, names, threadgroup memory)', (t) => {
  const clang = findClang();
  if (!clang) return t.skip('clang++ not installed (apt-get install clang)');
  const source = librarySource();
  const r = compileAsMsl(clang, source);
  assert.equal(r.status, 0, r.output);
  assert.equal(r.output.trim(), '', 'warnings');
  assert.deepEqual(misplacedVariables(r.ir), []);
  const bytes = threadgroupBytes(
    r.ir,
    kernels(source).map((k) => k.name),
  );
  assert.equal(bytes.get('bs_route_sort'), 3 * 512 * 4, 'three int[BS_MAX_EXPERTS]');
  assert.equal(bytes.get('bs_dense_matmul'), 4 * 8 * 4, 'float[BS_MM_SIMDGROUPS][BS_MM_TOKENS]');
  const over = [...bytes].filter(([, b]) => b > MAX_THREADGROUP_BYTES);
  assert.deepEqual(over, [], `more than ${MAX_THREADGROUP_BYTES} bytes of threadgroup memory`);
  t.diagnostic(`most threadgroup memory: ${Math.max(...bytes.values())} bytes`);
});

// MSL's kernel input attributes (specification 3.1, table 5.8) and the types each admits.
const INDEX_TYPES = ['uint', 'ushort'];
const POSITION_TYPES = ['uint', 'uint2', 'uint3', 'ushort', 'ushort2', 'ushort3'];
const ATTRIBUTE_TYPES: Record<string, string[]> = {
  thread_index_in_simdgroup: INDEX_TYPES,
  thread_index_in_threadgroup: INDEX_TYPES,
  thread_index_in_quadgroup: INDEX_TYPES,
  simdgroup_index_in_threadgroup: INDEX_TYPES,
  simdgroups_per_threadgroup: INDEX_TYPES,
  quadgroup_index_in_threadgroup: INDEX_TYPES,
  quadgroups_per_threadgroup: INDEX_TYPES,
  threads_per_simdgroup: INDEX_TYPES,
  thread_execution_width: INDEX_TYPES,
  thread_position_in_grid: POSITION_TYPES,
  thread_position_in_threadgroup: POSITION_TYPES,
  threadgroup_position_in_grid: POSITION_TYPES,
  threadgroups_per_grid: POSITION_TYPES,
  threads_per_grid: POSITION_TYPES,
  threads_per_threadgroup: POSITION_TYPES,
  grid_origin: POSITION_TYPES,
  grid_size: POSITION_TYPES,
};
// A kernel's buffer argument table has 31 entries (indices 0-30).
const MAX_BUFFER_INDEX = 30;

/** Each kernel's name and parameters (split at top-level commas). */
function kernels(source: string): Array<{ name: string; params: string[] }> {
  const found: Array<{ name: string; params: string[] }> = [];
  for (const m of source.matchAll(/\bkernel\s+void\s+(\w+)\s*\(/g)) {
    const params: string[] = [];
    let depth = 1;
    let current = '';
    for (let i = (m.index ?? 0) + m[0].length; depth > 0 && i < source.length; ++i) {
      const c = source[i];
      if (c === '(') depth++;
      if (c === ')') depth--;
      if ((c === ',' && depth === 1) || depth === 0) {
        params.push(current.replace(/\s+/g, ' ').trim());
        current = '';
      } else current += c;
    }
    found.push({ name: m[1], params });
  }
  return found;
}

/** What breaks MSL's rules for kernel arguments: a buffer outside device/constant memory, a
 *  buffer index past the table or bound twice, an unknown attribute or one on the wrong type. */
function signatureProblems(source: string): string[] {
  const problems: string[] = [];
  for (const k of kernels(source)) {
    const indices = new Set<number>();
    for (const param of k.params) {
      const m = /^(.*?)\s*\[\[\s*(\w+)\s*(?:\(\s*(\d+)\s*\))?\s*\]\]$/.exec(param);
      if (!m) {
        problems.push(`${k.name}: argument '${param}' has no [[...]] attribute`);
        continue;
      }
      const [, decl, attribute, index] = m;
      if (attribute === 'buffer') {
        const i = Number(index);
        if (!/^(device|constant)\s/.test(decl))
          problems.push(`${k.name}: buffer ${i} '${decl}' is not device or constant`);
        if (i > MAX_BUFFER_INDEX) problems.push(`${k.name}: buffer index ${i} is past ${MAX_BUFFER_INDEX}`);
        if (indices.has(i)) problems.push(`${k.name}: buffer index ${i} is bound twice`);
        indices.add(i);
        continue;
      }
      const types = ATTRIBUTE_TYPES[attribute];
      const type = decl.replace(/^const\s+/, '').split(' ')[0];
      if (!types) problems.push(`${k.name}: unknown attribute [[${attribute}]]`);
      else if (!types.includes(type)) problems.push(`${k.name}: [[${attribute}]] on '${type}', not ${types.join('/')}`);
    }
  }
  return problems;
}

test('every kernel argument has a valid MSL attribute and buffer binding', () => {
  const source = librarySource();
  const found = kernels(source);
  assert.ok(found.length >= 25, `only ${found.length} kernels found`);
  assert.ok(
    found.every((k) => k.params.length >= 2),
    'a kernel parsed without its arguments',
  );
  assert.deepEqual(signatureProblems(source), []);
  const bad = `kernel void k(device float* a [[buffer(0)]], float* b [[buffer(1)]], device float* c [[buffer(1)]],
    device float* d [[buffer(31)]], uint lane [[thread_index_in_simd_group]], float tid [[thread_index_in_threadgroup]],
    uint3 tg [[threadgroup_position_in_grid]], uint n) {}`;
  assert.deepEqual(signatureProblems(bad), [
    "k: buffer 1 'float* b' is not device or constant",
    'k: buffer index 1 is bound twice',
    'k: buffer index 31 is past 30',
    'k: unknown attribute [[thread_index_in_simd_group]]',
    "k: [[thread_index_in_threadgroup]] on 'float', not uint/ushort",
    "k: argument 'uint n' has no [[...]] attribute",
  ]);
});

// Each breaks one MSL rule the shim's C++ accepts; the check must refuse it, naming why.
const BREAKERS: Array<[string, string, RegExp]> = [
  [
    'thread memory passed to a device helper',
    'kernel void k(device float* y [[buffer(0)]]) { thread float a[4]; y[0] = bs_load((thread const uchar*)a, 0u, 0u, 0u); }',
    /no matching function for call to 'bs_load'/,
  ],
  [
    'a device pointer passed as a thread pointer',
    'inline float h(float* p) { return p[0]; }\nkernel void k(device float* y [[buffer(0)]]) { y[0] = h(y); }',
    /no matching function for call to 'h'/,
  ],
  [
    'threadgroup memory passed without BS_TG_PTR',
    'inline float h(float* p) { return p[0]; }\nkernel void k(device float* y [[buffer(0)]]) { threadgroup float s[32]; y[0] = h(s); }',
    /no matching function for call to 'h'/,
  ],
  [
    'constant arguments bound to a thread reference',
    'kernel void k(device float* y [[buffer(0)]], constant QMatParams& p [[buffer(1)]]) { const QMatParams& q = p; y[0] = q.rows; }',
    /changes address space/,
  ],
  ['the C++ standard library', 'kernel void k(device float* y [[buffer(0)]]) { y[0] = std::abs(y[1]); }', /poisoned/],
  ['a double', 'kernel void k(device float* y [[buffer(0)]]) { double d = y[1]; y[0] = d; }', /poisoned/],
  [
    'a C library call',
    'kernel void k(device float* y [[buffer(0)]]) { memcpy(y, y + 1, 4); }',
    /undeclared identifier 'memcpy'/,
  ],
  ['mixed-type min', 'kernel void k(device float* y [[buffer(0)]]) { y[0] = min(y[1], 2u); }', /ambiguous/],
];

test('the MSL check refuses what Apple’s compiler refuses', (t) => {
  const clang = findClang();
  if (!clang) return t.skip('clang++ not installed (apt-get install clang)');
  const library = librarySource();
  for (const [rule, snippet, expected] of BREAKERS) {
    const r = compileAsMsl(clang, `${library}\n${snippet}\n`);
    assert.notEqual(r.status, 0, `${rule}: accepted\n${snippet}`);
    assert.match(r.output, expected, `${rule}: ${r.output}`);
  }
  // Variables outside constant and threadgroup memory: a program-scope one, a function static.
  const vars =
    'float g_count = 0.0f;\nconstant float k_tab[2] = {1.0f, 2.0f};\n' +
    'kernel void k_vars(device float* y [[buffer(0)]], uint tid [[thread_index_in_threadgroup]]) {\n' +
    '  static float s[4];\n  s[tid & 3u] = k_tab[tid & 1u];\n  g_count += 1.0f;\n  y[tid] = s[0] + g_count;\n}\n';
  const rv = compileAsMsl(clang, `${library}\n${vars}`);
  assert.equal(rv.status, 0, rv.output);
  assert.deepEqual(misplacedVariables(rv.ir), ['g_count (address space 0)', '_ZZ6k_varsPU3AS1fjE1s (address space 0)']);
  // One float past the threadgroup limit, split over two arrays.
  const big =
    'kernel void k_big(device float* y [[buffer(0)]], uint tid [[thread_index_in_threadgroup]]) {\n' +
    '  threadgroup float a[4096], b[4097];\n  a[tid] = 1.0f;\n  b[tid] = 2.0f;\n  y[tid] = a[tid] + b[tid];\n}\n';
  const r = compileAsMsl(clang, `${library}\n${big}`);
  assert.equal(r.status, 0, r.output);
  assert.equal(threadgroupBytes(r.ir, ['k_big', ...kernels(library).map((k) => k.name)]).get('k_big'), 32772);
});
