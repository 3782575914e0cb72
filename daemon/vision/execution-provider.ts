// Which onnxruntime execution provider a vision tower runs on: CoreML on macOS, CUDA where this
// onnxruntime-node has its provider library (a GPU build; the npm package's CUDA download is off
// in this project's set-up, so usually not), CPU otherwise (Jetson: CPU unless a GPU build is present).
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { createRequire } from 'node:module';

export const PROVIDERS = ['auto', 'cpu', 'cuda', 'coreml'] as const;
export type ProviderChoice = (typeof PROVIDERS)[number];

export interface ProviderFacts {
  platform: NodeJS.Platform;
  /** onnxruntime-node's listSupportedBackends(). */
  backends: readonly { name: string; bundled: boolean }[];
  /** Whether the CUDA provider library sits next to the binding. */
  cudaLibrary: boolean;
}

export interface ProviderPick {
  provider: 'cpu' | 'cuda' | 'coreml';
  why: string;
}

export function pickProvider(choice: ProviderChoice, f: ProviderFacts): ProviderPick {
  const has = (n: string) => f.backends.some((b) => b.name === n);
  const cuda = has('cuda') && (f.backends.find((b) => b.name === 'cuda')!.bundled || f.cudaLibrary);
  if (choice === 'cpu') return { provider: 'cpu', why: 'configured' };
  if (choice === 'coreml' || (choice === 'auto' && f.platform === 'darwin')) {
    if (f.platform === 'darwin' && has('coreml')) return { provider: 'coreml', why: 'macOS: CoreML' };
    if (choice === 'coreml')
      throw new Error("vision.provider coreml needs macOS with onnxruntime-node's CoreML provider");
  }
  if (choice === 'cuda' || choice === 'auto') {
    if (cuda) return { provider: 'cuda', why: 'the CUDA provider library is installed' };
    if (choice === 'cuda')
      throw new Error(
        'vision.provider cuda: this onnxruntime-node has no CUDA provider library (a GPU build is needed)',
      );
  }
  return {
    provider: 'cpu',
    why: f.platform === 'darwin' ? 'CoreML unavailable' : 'no GPU build of onnxruntime installed (CPU binaries only)',
  };
}

/** The facts of this process's onnxruntime-node. */
export async function providerFacts(): Promise<ProviderFacts> {
  const ort = await import('onnxruntime-node');
  const require = createRequire(import.meta.url);
  const bin = join(
    dirname(require.resolve('onnxruntime-node')),
    '..',
    'bin',
    'napi-v6',
    process.platform,
    process.arch,
  );
  return {
    platform: process.platform,
    backends: ort.listSupportedBackends(),
    cudaLibrary: existsSync(join(bin, 'libonnxruntime_providers_cuda.so')),
  };
}
