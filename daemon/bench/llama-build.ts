// llama.cpp compiled on this machine for `bench compare --llama native`: the source node-llama-cpp
// ships (a git bundle) cloned offline and built in Release with GGML_NATIVE (-march=native: the
// compiler targets exactly this CPU, so no instruction set it cannot run is used), only the
// llama-bench target; `native-avx2` builds it for AVX2 and nothing wider. Cached under
// <data_dir>/llama.cpp/<commit>-<arch>-<ISA flags>: a second run, or another model, reuses it;
// another CPU or llama.cpp version builds its own.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { arch as osArch } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Building or running llama.cpp failed (the message says which step and how). */
export class LlamaBenchError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'LlamaBenchError';
  }
}

/** Runs a program to its end; what it printed (the tail of long output) and its exit code. */
export type Runner = (
  cmd: string,
  args: readonly string[],
  opts?: { cwd?: string },
) => Promise<{ code: number; stdout: string; stderr: string }>;

const KEEP = 1 << 20;

export const spawnRunner: Runner = (cmd, args, opts = {}) =>
  new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd: opts.cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    const out = { stdout: '', stderr: '' };
    const keep = (k: 'stdout' | 'stderr') => (b: Buffer) => {
      out[k] = (out[k] + b.toString()).slice(-KEEP);
    };
    child.stdout.on('data', keep('stdout'));
    child.stderr.on('data', keep('stderr'));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code: code ?? -1, ...out }));
  });

// Instruction sets llama.cpp's CPU kernels choose between; the cache key lists those present.
const X86_FLAGS = [
  'avx',
  'avx2',
  'fma',
  'f16c',
  'bmi2',
  'avx_vnni',
  'avx512f',
  'avx512bw',
  'avx512vl',
  'avx512_vnni',
  'avx512_bf16',
  'avx512vbmi',
  'amx_tile',
  'amx_int8',
  'amx_bf16',
];
const ARM_FLAGS = ['asimd', 'asimddp', 'asimdhp', 'i8mm', 'sve', 'sve2', 'bf16', 'sme'];

/** `<arch>-<flags>` from /proc/cpuinfo's first flags (x86) or Features (arm) line, e.g. x86_64-avx-avx2-fma. */
export function cpuKey(cpuinfo: string, arch: string): string {
  const line = /^(?:flags|Features)\s*:(.*)$/m.exec(cpuinfo)?.[1] ?? '';
  const have = new Set(line.trim().split(/\s+/));
  const wanted = arch === 'x64' || arch === 'x86_64' ? X86_FLAGS : ARM_FLAGS;
  const name = arch === 'x64' ? 'x86_64' : arch;
  return [name, ...wanted.filter((f) => have.has(f)).sort()].join('-');
}

/** This machine's key: /proc/cpuinfo (empty where there is none) and the process's architecture. */
export function hostCpuKey(): string {
  return cpuKey(existsSync('/proc/cpuinfo') ? readFileSync('/proc/cpuinfo', 'utf8') : '', osArch());
}

/** The bundle node-llama-cpp ships its llama.cpp source in. */
export function llamaBundle(): string {
  let dir = dirname(fileURLToPath(import.meta.resolve('node-llama-cpp')));
  const at = (d: string) => join(d, 'llama', 'gitRelease.bundle');
  while (!existsSync(at(dir)) && dirname(dir) !== dir) dir = dirname(dir);
  return at(dir);
}

export async function bundleCommit(bundle: string, run: Runner): Promise<string> {
  const r = await run('git', ['bundle', 'list-heads', bundle]);
  const commit = /^([0-9a-f]{40})\s/m.exec(r.stdout)?.[1];
  if (r.code !== 0 || !commit)
    throw new LlamaBenchError(
      `cannot read the llama.cpp source bundle ${bundle}: ${(r.stderr || r.stdout).trim().slice(-300)}`,
    );
  return commit;
}

export const CMAKE_ARGS = [
  '-DCMAKE_BUILD_TYPE=Release',
  '-DGGML_NATIVE=ON',
  '-DBUILD_SHARED_LIBS=OFF',
  '-DLLAMA_BUILD_TESTS=OFF',
  '-DLLAMA_BUILD_EXAMPLES=OFF',
  '-DLLAMA_BUILD_SERVER=OFF',
  '-DLLAMA_BUILD_APP=OFF',
  '-DLLAMA_OPENSSL=OFF',
  '-DLLAMA_BUILD_TOOLS=ON',
];

/** `native`: -march=native; `avx2`: AVX2 + FMA + F16C + BMI2 and nothing wider (x86-64 CPUs that
 *  have them), to compare with our `cpu-avx2` on a machine with AVX-512. */
export type LlamaIsa = 'native' | 'avx2';

const AVX2_FLAGS = ['avx', 'avx2', 'bmi2', 'f16c', 'fma'];
/** CMAKE_ARGS for the AVX2-only build: GGML_NATIVE off and each set named. */
export const AVX2_CMAKE_ARGS = [
  ...CMAKE_ARGS.filter((a) => a !== '-DGGML_NATIVE=ON'),
  '-DGGML_NATIVE=OFF',
  '-DGGML_AVX=ON',
  '-DGGML_AVX2=ON',
  '-DGGML_FMA=ON',
  '-DGGML_F16C=ON',
  '-DGGML_BMI2=ON',
  '-DGGML_AVX512=OFF',
];

export interface NativeLlamaOptions {
  /** The daemon's data_dir: builds go in <dataDir>/llama.cpp/. */
  dataDir: string;
  /** Default: node-llama-cpp's bundle. */
  bundle?: string;
  run?: Runner;
  log?: (line: string) => void;
  /** Default: /proc/cpuinfo (empty elsewhere) and the process's architecture. */
  cpuinfo?: string;
  arch?: string;
  /** Parallel compile jobs (default 2). */
  jobs?: number;
  /** Default "native". */
  isa?: LlamaIsa;
}

export interface NativeLlama {
  binary: string;
  dir: string;
  commit: string;
  cpu: string;
  /** False when this call built it. */
  cached: boolean;
}

/** The cached llama-bench for this CPU and source, building it first when missing. */
export async function ensureNativeLlama(o: NativeLlamaOptions): Promise<NativeLlama> {
  const run = o.run ?? spawnRunner;
  const log = o.log ?? (() => {});
  const bundle = o.bundle ?? llamaBundle();
  if (!existsSync(bundle))
    throw new LlamaBenchError(`the llama.cpp source bundle ${bundle} does not exist (node-llama-cpp)`);
  const commit = await bundleCommit(bundle, run);
  const host = o.cpuinfo === undefined ? hostCpuKey() : cpuKey(o.cpuinfo, o.arch ?? osArch());
  let cpu = host;
  if (o.isa === 'avx2') {
    const [arch, ...have] = host.split('-');
    const missing = AVX2_FLAGS.filter((f) => !have.includes(f));
    if (arch !== 'x86_64' || missing.length > 0)
      throw new LlamaBenchError(
        `an AVX2 build of llama.cpp needs an x86-64 CPU with ${AVX2_FLAGS.join(', ')}; this one (${host}) lacks ${arch !== 'x86_64' ? 'x86-64' : missing.join(', ')}`,
      );
    cpu = ['x86_64', ...AVX2_FLAGS, 'only'].join('-');
  }
  const dir = join(o.dataDir, 'llama.cpp', `${commit.slice(0, 12)}-${cpu}`);
  const binary = join(dir, 'build', 'bin', 'llama-bench');
  const out = { binary, dir, commit, cpu };
  if (existsSync(binary)) return { ...out, cached: true };
  // Built in <dir>.partial and renamed when done, so an interrupted build is never taken as cached.
  const partial = `${dir}.partial`;
  rmSync(partial, { recursive: true, force: true });
  mkdirSync(partial, { recursive: true });
  const step = async (what: string, cmd: string, args: string[], cwd?: string) => {
    log(`llama.cpp ${commit.slice(0, 12)} for ${cpu}: ${what}`);
    const r = await run(cmd, args, cwd ? { cwd } : {});
    if (r.code !== 0)
      throw new LlamaBenchError(
        `building llama.cpp failed at "${what}" (exit ${r.code}): ${(r.stderr || r.stdout).trim().slice(-2000)}`,
      );
  };
  await step('clone', 'git', ['clone', '--quiet', bundle, 'src'], partial);
  const args = o.isa === 'avx2' ? AVX2_CMAKE_ARGS : CMAKE_ARGS;
  await step('configure', 'cmake', ['-S', 'src', '-B', 'build', ...args], partial);
  const jobs = String(o.jobs ?? 2);
  await step('build llama-bench', 'cmake', ['--build', 'build', '--target', 'llama-bench', '-j', jobs], partial);
  if (!existsSync(join(partial, 'build', 'bin', 'llama-bench')))
    throw new LlamaBenchError(`building llama.cpp produced no ${join(partial, 'build', 'bin', 'llama-bench')}`);
  renameSync(partial, dir);
  return { ...out, cached: false };
}
