// Disks for doctor: filesystems with free space, physical disks, and whether they are NVMe
// (models stream from SSD, so the data_dir's disk matters most).
import type { Systeminformation } from 'systeminformation';

export interface FilesystemInfo {
  mount: string;
  device: string;
  type: string;
  size_bytes: number;
  free_bytes: number;
  /** true/false when the device says so; null when it cannot be told (e.g. LVM, overlay). */
  nvme: boolean | null;
}

export interface PhysicalDisk {
  device: string;
  name: string;
  type: string;
  interface: string;
  size_bytes: number;
  nvme: boolean;
}

export interface DiskReport {
  filesystems: FilesystemInfo[];
  physical: PhysicalDisk[];
  /** The filesystem holding data_dir (where models and state live). */
  data_dir: { path: string; mount: string | null; free_bytes: number | null; nvme: boolean | null };
}

const NOT_NVME = /^\/dev\/(sd|vd|hd|xvd|mmcblk)/;

function physicalIsNvme(d: Systeminformation.DiskLayoutData): boolean {
  return /nvme/i.test(d.type) || /nvme|pcie/i.test(d.interfaceType) || /nvme/i.test(d.device);
}

function fsIsNvme(
  fs: Systeminformation.FsSizeData,
  blocks: Systeminformation.BlockDevicesData[],
  physical: PhysicalDisk[],
  os: string,
): boolean | null {
  if (/nvme/i.test(fs.fs)) return true;
  const block = blocks.find((b) => b.mount === fs.mount && b.mount !== '');
  if (block && (/nvme/i.test(block.protocol) || block.name.startsWith('nvme'))) return true;
  if (NOT_NVME.test(fs.fs)) return false;
  // macOS APFS volumes (/dev/diskNsM) sit on synthesized containers: when every physical
  // disk is NVMe (the internal SSD of Apple Silicon Macs), so is the volume.
  if (os === 'darwin' && fs.fs.startsWith('/dev/disk') && physical.length > 0)
    return physical.every((p) => p.nvme) ? true : null;
  return null;
}

/** The mount that holds `path`: the longest mount point that is a prefix of it. */
export function mountOf(path: string, mounts: string[]): string | null {
  let best: string | null = null;
  for (const m of mounts) {
    const prefix = m.endsWith('/') ? m : `${m}/`;
    if ((path === m || path.startsWith(prefix) || m === '/') && (best === null || m.length > best.length)) best = m;
  }
  return best;
}

export function describeDisks(
  fsSize: Systeminformation.FsSizeData[],
  layout: Systeminformation.DiskLayoutData[],
  blocks: Systeminformation.BlockDevicesData[],
  dataDir: string,
  os: string,
): DiskReport {
  const physical = layout.map((d) => ({
    device: d.device,
    name: d.name,
    type: d.type,
    interface: d.interfaceType,
    size_bytes: d.size,
    nvme: physicalIsNvme(d),
  }));
  const filesystems = fsSize
    .filter((f) => f.size > 0)
    .map((f) => ({
      mount: f.mount,
      device: f.fs,
      type: f.type,
      size_bytes: f.size,
      free_bytes: f.available,
      nvme: fsIsNvme(f, blocks, physical, os),
    }));
  const mount = mountOf(
    dataDir,
    filesystems.map((f) => f.mount),
  );
  const holder = filesystems.find((f) => f.mount === mount);
  return {
    filesystems,
    physical,
    data_dir: { path: dataDir, mount, free_bytes: holder?.free_bytes ?? null, nvme: holder?.nvme ?? null },
  };
}
