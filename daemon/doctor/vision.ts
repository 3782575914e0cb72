// doctor's vision section: the onnxruntime-node build, the execution provider vision towers get
// here (auto), and per configured model whether its folder takes images.
import { createRequire } from 'node:module';
import { pickProvider, providerFacts } from '../vision/execution-provider.js';
import { describeModelFolder, type FolderInputs } from '../vision/model-folder.js';

export interface VisionReport {
  onnxruntime: string | null;
  provider: string | null;
  why: string;
  backends: string[];
  error?: string;
  models: ({ name: string; path: string } & FolderInputs)[];
}

export async function describeVision(models: Record<string, { path: string }>): Promise<VisionReport> {
  const list = Object.entries(models).map(([name, m]) => ({ name, path: m.path, ...describeModelFolder(m.path) }));
  try {
    const facts = await providerFacts();
    const pick = pickProvider('auto', facts);
    const pkg = createRequire(import.meta.url)('onnxruntime-node/package.json') as { version: string };
    return {
      onnxruntime: pkg.version,
      provider: pick.provider,
      why: pick.why,
      backends: facts.backends.map((b) => `${b.name}${b.bundled ? '' : ' (not bundled)'}`),
      models: list,
    };
  } catch (e) {
    return { onnxruntime: null, provider: null, why: '', backends: [], error: (e as Error).message, models: list };
  }
}
