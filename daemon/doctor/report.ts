// `brainstem doctor`: what a user needs to know before running models on this box.
import { arch, cpus, platform } from 'node:os';
import si, { type Systeminformation } from 'systeminformation';
import { tryLoadNative, type BackendInfo, type NativeAddon } from '../native/binding.js';
import { describeDisks, type DiskReport } from './disks.js';
import { detectJetson, type JetsonInfo, type ReadText, readText } from './jetson.js';
import { recommendProfile, type EngineProfile } from './profile.js';
import { memoryBudget, modelGeometry } from '../engine/stream-budget.js';
import { describeVision, type VisionReport } from './vision.js';
import { configPath } from '../config/load.js';

export interface CpuReport {
  vendor: string;
  model: string;
  cores: number;
  /** Performance/efficiency split (Apple M-series, hybrid Intel); absent when uniform. */
  performance_cores?: number;
  efficiency_cores?: number;
  apple_silicon: boolean;
  jetson?: JetsonInfo;
}

export interface DoctorReport {
  platform: string;
  arch: string;
  cpu: CpuReport;
  memory: { total_bytes: number; available_bytes: number; unified: boolean };
  disks: DiskReport;
  native: { built: boolean; version?: string; cpu_features?: string; backends: BackendInfo[]; error?: string };
  /** The streaming auto-size for the reference 30B-A3B shape under this box's memory budget. */
  recommended_profile: EngineProfile;
  /** The same for each configured model folder (or why its geometry could not be read). */
  model_profiles: (EngineProfile | { model: string; error: string })[];
  /** onnxruntime-node and the provider vision towers run on; what each configured model takes. */
  vision: VisionReport;
}

/** Everything doctor reads from the machine, injectable for tests. */
export interface DoctorProbe {
  platform: string;
  arch: string;
  cpu(): Promise<Systeminformation.CpuData>;
  mem(): Promise<Systeminformation.MemData>;
  fsSize(): Promise<Systeminformation.FsSizeData[]>;
  diskLayout(): Promise<Systeminformation.DiskLayoutData[]>;
  blockDevices(): Promise<Systeminformation.BlockDevicesData[]>;
  readText: ReadText;
  // Doctor reads only info(), so a probe needs no engine functions.
  native: () => { addon?: Pick<NativeAddon, 'info'>; error?: string };
}

export const systemProbe: DoctorProbe = {
  platform: platform(),
  arch: arch(),
  cpu: () => si.cpu(),
  mem: () => si.mem(),
  fsSize: () => si.fsSize(),
  // diskLayout shells out (lsblk/smartctl, system_profiler): tolerate its failure.
  diskLayout: () => si.diskLayout().catch(() => []),
  blockDevices: () => si.blockDevices().catch(() => []),
  readText,
  native: tryLoadNative,
};

function describeCpu(c: Systeminformation.CpuData, probe: DoctorProbe, jetson: JetsonInfo | undefined): CpuReport {
  const apple = probe.platform === 'darwin' && probe.arch === 'arm64';
  const model = [c.manufacturer, c.brand].filter(Boolean).join(' ') || cpus()[0]?.model || 'unknown';
  const report: CpuReport = {
    vendor: c.manufacturer || c.vendor || 'unknown',
    model,
    cores: c.cores,
    apple_silicon: apple,
  };
  if (apple || (c.efficiencyCores ?? 0) > 0) {
    report.performance_cores = c.performanceCores ?? c.physicalCores;
    report.efficiency_cores = c.efficiencyCores ?? 0;
  }
  if (jetson) {
    report.vendor = 'NVIDIA';
    report.model = jetson.model;
    report.jetson = jetson;
  }
  return report;
}

export async function gatherDoctorReport(
  dataDir: string,
  probe: DoctorProbe = systemProbe,
  models: Record<string, { path: string }> = {},
  cwd = process.cwd(),
): Promise<DoctorReport> {
  // The folders `start` would open: `~` expanded, relative paths from the working directory.
  const folders = Object.fromEntries(Object.entries(models).map(([n, m]) => [n, { path: configPath(m.path, cwd) }]));
  const jetson = probe.platform === 'linux' ? detectJetson(probe.readText) : undefined;
  const [cpu, mem, fsSize, layout, blocks] = await Promise.all([
    probe.cpu(),
    probe.mem(),
    probe.fsSize(),
    probe.diskLayout(),
    probe.blockDevices(),
  ]);
  const native = probe.native();
  const info = native.addon?.info();
  const budget = memoryBudget(mem.total);
  const modelProfiles = Object.entries(folders).map(([name, m]) => {
    try {
      return recommendProfile(budget, name, modelGeometry(m.path));
    } catch (e) {
      return { model: name, error: (e as Error).message };
    }
  });
  return {
    platform: probe.platform,
    arch: probe.arch,
    cpu: describeCpu(cpu, probe, jetson),
    // Apple Silicon and Jetson share one memory between CPU and GPU.
    memory: {
      total_bytes: mem.total,
      available_bytes: mem.available,
      unified: (probe.platform === 'darwin' && probe.arch === 'arm64') || jetson !== undefined,
    },
    disks: describeDisks(fsSize, layout, blocks, dataDir, probe.platform),
    native: info
      ? { built: true, version: info.version, cpu_features: info.cpuFeatures, backends: info.backends }
      : { built: false, backends: [], error: native.error },
    recommended_profile: recommendProfile(budget),
    model_profiles: modelProfiles,
    vision: await describeVision(folders),
  };
}
