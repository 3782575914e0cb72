// The native sources compiled as on a Mac, as far as Linux can: clang against libc++ (the C++
// library Apple ships, which lacks some of what libstdc++ has, such as from_chars for doubles,
// and includes less transitively), once for x86-64 and once cross for arm64 with the Metal
// backend's C++ on (BRAINSTEM_WITH_METAL: the NEON kernels with their per-file -march flags, the
// registry's Metal entries). CMake configures each build for real (CUDA off) and writes its
// compile commands; every one then runs with -fsyntax-only: no objects, no link. The
// Objective-C++ Metal device compiles too, with ARC, against test/native/macos-sdk's
// declarations of the Foundation and Metal API it uses (two SDK generations). What stays
// Apple-only (the __APPLE__ branches, the real SDK, the link) is listed in docs/metal.md.
// Skipped (with the reason) without clang, libc++ or the aarch64 headers; failed when CI=true
// (.ci/run installs them).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { repoRoot } from '../../daemon/util/repo-root.js';
import { tempDir } from '../helpers/temp.js';
import { findClang } from './helpers/clang.js';

type Command = { directory: string; command: string; file: string };

/** libc++'s header folder beside clang's resource folder, or why there is none usable. */
function libcxxHeaders(clang: string): string | { skip: string } {
  const resource = spawnSync(clang, ['-print-resource-dir'], { encoding: 'utf8' }).stdout.trim();
  const dir = resolve(resource, '..', '..', '..', 'include', 'c++', 'v1');
  const missing = [];
  if (!existsSync(join(dir, 'vector'))) missing.push(`libc++ headers (${dir})`);
  if (!existsSync('/usr/aarch64-linux-gnu/include/stdio.h')) missing.push('the aarch64 C headers');
  if (missing.length === 0) return dir;
  const why = `${missing.join(' and ')} not installed (apt-get install libc++-dev libc++abi-dev libc6-dev-arm64-cross)`;
  if (process.env.CI === 'true') throw new Error(`CI=true but ${why}`);
  return { skip: why };
}

/** Configures the native build in `dir` with `args`, embeds the Metal sources; its compile commands. */
function configure(dir: string, args: string[], env: Record<string, string>): Command[] {
  const r = spawnSync(
    'cmake',
    ['-S', repoRoot, '-B', dir, '-DBRAINSTEM_CUDA=OFF', '-DCMAKE_EXPORT_COMPILE_COMMANDS=ON', ...args],
    { encoding: 'utf8', env: { ...process.env, ...env } },
  );
  assert.equal(r.status, 0, `cmake configure failed:\n${r.stdout}\n${r.stderr}`);
  const embed = spawnSync('cmake', [
    `-DSRC=${join(repoRoot, 'native', 'metal')}`,
    `-DOUT=${join(dir, 'generated', 'metal-sources.inc')}`,
    '-P',
    join(repoRoot, 'cmake', 'embed-metal.cmake'),
  ]);
  assert.equal(embed.status, 0, String(embed.stderr));
  return JSON.parse(readFileSync(join(dir, 'compile_commands.json'), 'utf8')) as Command[];
}

/** Every command with -fsyntax-only, two at a time, niced; the diagnostics of those that print any. */
async function syntaxCheck(commands: Command[]): Promise<string[]> {
  const problems: string[] = [];
  const queue = [...commands];
  const worker = async () => {
    for (let c = queue.shift(); c; c = queue.shift()) {
      const { directory, command, file } = c;
      const output = await new Promise<string>((done) => {
        const p = spawn('nice', ['-n', '10', 'sh', '-c', `${command} -fsyntax-only`], { cwd: directory });
        let text = '';
        p.stdout.on('data', (d) => (text += d));
        p.stderr.on('data', (d) => (text += d));
        p.on('close', (status) => done(status === 0 ? text : `${text}(exit ${status})`));
      });
      if (output.trim()) problems.push(`${file}:\n${output}`);
    }
  };
  await Promise.all([worker(), worker()]);
  return problems;
}

test('the native sources compile with clang and libc++ for x86-64 and arm64 (Metal on)', async (t) => {
  const clang = findClang();
  if (!clang) return t.skip('clang++ not installed (apt-get install clang)');
  const headers = libcxxHeaders(clang);
  if (typeof headers !== 'string') return t.skip(headers.skip);
  const cc = clang.replace(/clang\+\+(-\d+)?$/, 'clang$1');
  const addonHeaders = `-DCMAKE_JS_INC=${join(repoRoot, 'node_modules', 'node-api-headers', 'include')};${join(repoRoot, 'node_modules', 'node-addon-api')}`;
  const builds: Array<[string, string[], Record<string, string>]> = [
    ['x86-64', [`-DCMAKE_C_COMPILER=${cc}`, `-DCMAKE_CXX_COMPILER=${clang}`, '-DCMAKE_CXX_FLAGS=-stdlib=libc++'], {}],
    [
      'arm64 with BRAINSTEM_WITH_METAL',
      [
        `-DCMAKE_TOOLCHAIN_FILE=${join(repoRoot, 'cmake', 'aarch64-linux-clang.cmake')}`,
        '-DCMAKE_TRY_COMPILE_TARGET_TYPE=STATIC_LIBRARY', // no arm64 libc++ to link against
        `-DCMAKE_CXX_FLAGS=-stdlib=libc++ -isystem ${headers} -DBRAINSTEM_WITH_METAL=1`,
      ],
      { CLANG: cc },
    ],
  ];
  for (const [name, args, env] of builds) {
    const dir = tempDir('bs-libcxx-');
    try {
      const commands = configure(dir.path, [...args, addonHeaders], env);
      assert.ok(
        commands.some((c) => c.file.endsWith('json.cpp')) && commands.length > 100,
        `${name}: ${commands.length} compile commands`,
      );
      if (name.startsWith('arm64'))
        assert.ok(
          commands.some((c) => /neon-i8mm/.test(c.file)),
          'no NEON sources',
        );
      const problems = await syntaxCheck(commands);
      assert.deepEqual(problems, [], `${name}: ${problems.length} of ${commands.length} sources`);
      t.diagnostic(`${name}: ${commands.length} sources clean`);
    } finally {
      dir.remove();
    }
  }
});

/** clang's diagnostics for `source` (the Metal device's Objective-C++) against test/native/macos-sdk's
 *  declarations of Foundation and Metal, with ARC and libc++; `defines` as an SDK would set them. */
function compileObjc(clang: string, source: string, defines: string[]): { status: number | null; output: string } {
  const dir = tempDir('bs-objc-');
  try {
    const file = join(dir.path, 'metal-device.mm');
    writeFileSync(file, source);
    const r = spawnSync(
      clang,
      [
        '-x',
        'objective-c++',
        '-std=c++20',
        '-stdlib=libc++',
        '-fobjc-arc',
        '-fblocks',
        '-fobjc-runtime=macosx-13.0',
        '-fsyntax-only',
        '-Wall',
        '-Wextra',
        '-Wno-unused-parameter',
        '-I',
        join(repoRoot, 'test', 'native', 'macos-sdk'),
        '-I',
        join(repoRoot, 'native'),
        ...defines,
        file,
      ],
      { encoding: 'utf8' },
    );
    return { status: r.status, output: `${r.stdout}${r.stderr}` };
  } finally {
    dir.remove();
  }
}

test('the Objective-C++ Metal device compiles against the Metal API it uses (ARC, libc++)', (t) => {
  const clang = findClang();
  if (!clang) return t.skip('clang++ not installed (apt-get install clang)');
  const headers = libcxxHeaders(clang);
  if (typeof headers !== 'string') return t.skip(headers.skip);
  const source = readFileSync(join(repoRoot, 'native', 'metal', 'metal-device.mm'), 'utf8');
  // An SDK before macOS 15 (fastMathEnabled), and one with mathMode.
  const sdks = [[], ['-D__MAC_15_0=150000', '-D__MAC_OS_X_VERSION_MAX_ALLOWED=150000']];
  for (const defines of sdks) {
    const r = compileObjc(clang, source, defines);
    assert.equal(r.status, 0, r.output);
    assert.equal(r.output.trim(), '', 'warnings');
  }
  // What a Mac's compiler would refuse: a selector Metal lacks, an override the interface lost.
  const breakers: Array<[string, string, RegExp]> = [
    ['deallocator:nil', 'dealloc:nil', /no known instance method for selector/],
    ['uint64_t working_set_budget() const override', 'uint64_t working_set_budget() override', /abstract class/],
  ];
  for (const [from, to, expected] of breakers) {
    assert.ok(source.includes(from), `the .mm no longer has '${from}'`);
    const r = compileObjc(clang, source.replace(from, to), sdks[1]);
    assert.notEqual(r.status, 0, `'${to}' accepted`);
    assert.match(r.output, expected);
  }
});
