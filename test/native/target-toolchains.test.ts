// The native sources compiled by the targets' toolchains, as far as Linux can. A Mac: clang
// against libc++ (Apple's C++ library, which lacks some of what libstdc++ has, such as
// from_chars for doubles, and includes less transitively), for x86-64 and cross for arm64 with
// the Metal backend's C++ on (BRAINSTEM_WITH_METAL; the NEON kernels with their per-file -march
// flags); and the Objective-C++ Metal device with ARC against test/native/macos-sdk's
// declarations of the Foundation and Metal API it uses (two SDK generations). A Jetson: arm64
// GCC 11 with its libstdc++ (JetPack 6's compiler; the normal build is GCC 12). CMake configures
// each build for real (CUDA off) and writes its compile commands; every one then runs with
// -fsyntax-only: no objects, no link. What stays target-only is listed in docs/metal.md and
// docs/cuda.md. Skipped (with the reason) without the tools; failed when CI=true (.ci/run
// installs them).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { repoRoot } from '../../daemon/util/repo-root.js';
import { tempDir } from '../helpers/temp.js';
import { findClang } from './helpers/clang.js';

type Command = { directory: string; command: string; file: string };

/** Why a check cannot run here (undefined: it can); throws under CI=true instead. */
function missing(what: string[], packages: string): string | undefined {
  if (what.length === 0) return undefined;
  const why = `${what.join(' and ')} not installed (apt-get install ${packages})`;
  if (process.env.CI === 'true') throw new Error(`CI=true but ${why}`);
  return why;
}

/** libc++'s header folder beside clang's resource folder. */
function libcxxHeaders(clang: string): string {
  const resource = spawnSync(clang, ['-print-resource-dir'], { encoding: 'utf8' }).stdout.trim();
  return resolve(resource, '..', '..', '..', 'include', 'c++', 'v1');
}

const onPath = (tool: string) => spawnSync('sh', ['-c', `command -v ${tool}`]).status === 0;
const aarch64Headers = () => existsSync('/usr/aarch64-linux-gnu/include/stdio.h');

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

type Build = { name: string; args: string[]; env?: Record<string, string>; arm64?: boolean };

/** Configures each build in a temp folder and syntax-checks every compile command. */
async function checkBuilds(t: { diagnostic(m: string): void }, builds: Build[]): Promise<void> {
  const addonHeaders = `-DCMAKE_JS_INC=${join(repoRoot, 'node_modules', 'node-api-headers', 'include')};${join(repoRoot, 'node_modules', 'node-addon-api')}`;
  for (const { name, args, env, arm64 } of builds) {
    const dir = tempDir('bs-toolchain-');
    try {
      const commands = configure(dir.path, [...args, addonHeaders], env ?? {});
      assert.ok(
        commands.some((c) => c.file.endsWith('json.cpp')) && commands.length > 100,
        `${name}: ${commands.length} compile commands`,
      );
      if (arm64)
        assert.ok(
          commands.some((c) => /neon-i8mm/.test(c.file)),
          `${name}: no NEON sources`,
        );
      const problems = await syntaxCheck(commands);
      assert.deepEqual(problems, [], `${name}: ${problems.length} of ${commands.length} sources`);
      t.diagnostic(`${name}: ${commands.length} sources clean`);
    } finally {
      dir.remove();
    }
  }
}

test('the native sources compile with clang and libc++ for x86-64 and arm64 (Metal on), as on a Mac', async (t) => {
  const clang = findClang();
  if (!clang) return t.skip('clang++ not installed (apt-get install clang)');
  const headers = libcxxHeaders(clang);
  const why = missing(
    [
      ...(existsSync(join(headers, 'vector')) ? [] : [`libc++ headers (${headers})`]),
      ...(aarch64Headers() ? [] : ['the aarch64 C headers']),
    ],
    'libc++-dev libc++abi-dev libc6-dev-arm64-cross',
  );
  if (why) return t.skip(why);
  const cc = clang.replace(/clang\+\+(-\d+)?$/, 'clang$1');
  await checkBuilds(t, [
    {
      name: 'x86-64, clang + libc++',
      args: [`-DCMAKE_C_COMPILER=${cc}`, `-DCMAKE_CXX_COMPILER=${clang}`, '-DCMAKE_CXX_FLAGS=-stdlib=libc++'],
    },
    {
      name: 'arm64, clang + libc++, BRAINSTEM_WITH_METAL',
      args: [
        `-DCMAKE_TOOLCHAIN_FILE=${join(repoRoot, 'cmake', 'aarch64-linux-clang.cmake')}`,
        '-DCMAKE_TRY_COMPILE_TARGET_TYPE=STATIC_LIBRARY', // no arm64 libc++ to link against
        `-DCMAKE_CXX_FLAGS=-stdlib=libc++ -isystem ${headers} -DBRAINSTEM_WITH_METAL=1`,
      ],
      env: { CLANG: cc },
      arm64: true,
    },
  ]);
});

test('the native sources compile with arm64 GCC 11 (JetPack 6), as on a Jetson', async (t) => {
  const why = missing(
    [
      ...(onPath('aarch64-linux-gnu-g++-11') ? [] : ['aarch64-linux-gnu-g++-11']),
      ...(aarch64Headers() ? [] : ['the aarch64 C headers']),
    ],
    'g++-11-aarch64-linux-gnu libc6-dev-arm64-cross',
  );
  if (why) return t.skip(why);
  await checkBuilds(t, [
    {
      name: 'arm64, GCC 11',
      args: [`-DCMAKE_TOOLCHAIN_FILE=${join(repoRoot, 'cmake', 'aarch64-linux-gnu.cmake')}`],
      env: { GCC_VERSION: '11' },
      arm64: true,
    },
  ]);
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
  const why = missing(
    existsSync(join(headers, 'vector')) ? [] : [`libc++ headers (${headers})`],
    'libc++-dev libc++abi-dev',
  );
  if (why) return t.skip(why);
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
