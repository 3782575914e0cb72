// The embedded Metal library parsed as MSL without a Mac: clang reads params.h, prelude.metal and
// the kernels in the order the addon embeds them (cmake/embed-metal.cmake) for arm64 Apple, with
// test/native/msl/msl-builtins.h forced in front (MSL's keywords as clang address spaces, its
// scalar and vector types, C++ features MSL leaves out poisoned), a declarations-only
// <metal_stdlib> beside it and no C++ standard library. What the shim compiles as plain C++ but
// Apple's compiler refuses (a device pointer passed where a thread one is declared, a name only
// the C++ library has) fails here; what only Apple's compiler can tell is in docs/metal.md.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { repoRoot } from '../../daemon/util/repo-root.js';

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

/** A clang++ on the path (Debian's versioned names too); throws under CI=true when none is. */
function findClang(): string | undefined {
  const r = spawnSync('sh', ['-c', 'command -v clang++ || ls /usr/bin/clang++-* 2>/dev/null | sort -V | tail -1'], {
    encoding: 'utf8',
  });
  const found = r.stdout.trim().split('\n')[0];
  if (found) return found;
  if (process.env.CI === 'true') throw new Error('CI=true but clang++ is missing (.ci/run installs clang)');
  return undefined;
}

/** clang's verdict on `source` as MSL: status and diagnostics. */
function parseAsMsl(clang: string, source: string): { status: number | null; output: string } {
  const dir = mkdtempSync(join(tmpdir(), 'bs-msl-'));
  try {
    const file = join(dir, 'library.metal');
    writeFileSync(file, source);
    const r = spawnSync(
      clang,
      [
        '--target=arm64-apple-macos13',
        '-std=c++14',
        '-fsyntax-only',
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
    return { status: r.status, output: `${r.stdout}${r.stderr}` };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

test('the embedded Metal library parses as MSL (address spaces, names, no C++ library)', (t) => {
  const clang = findClang();
  if (!clang) return t.skip('clang++ not installed (apt-get install clang)');
  const r = parseAsMsl(clang, librarySource());
  assert.equal(r.status, 0, r.output);
  assert.equal(r.output.trim(), '', 'warnings');
});

test('every kernel buffer argument is in the device or constant address space', () => {
  const source = librarySource();
  const buffers = [...source.matchAll(/([(,]\s*)([^,()]*?)\s*\[\[buffer\(\d+\)\]\]/g)].map((m) => m[2]);
  assert.ok(buffers.length > 100, `only ${buffers.length} buffer arguments found`);
  const bad = buffers.filter((b) => !/^(device|constant)\s/.test(b));
  assert.deepEqual(bad, []);
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
    const r = parseAsMsl(clang, `${library}\n${snippet}\n`);
    assert.notEqual(r.status, 0, `${rule}: accepted\n${snippet}`);
    assert.match(r.output, expected, `${rule}: ${r.output}`);
  }
});
