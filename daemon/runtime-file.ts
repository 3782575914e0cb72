// <data_dir>/daemon.json: where a running daemon listens (no secrets), so tools and tests can
// find a daemon started on free ports. Written once the daemon is ready, removed on stop.
import { readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface RuntimeInfo {
  pid: number;
  version: string;
  started_at: string;
  http: string;
  ws: string;
  /** Broker URL without credentials; null when none is configured. */
  mqtt: string | null;
  mqtt_embedded: boolean;
  /** Present when the API token was generated (read it from there). */
  token_file?: string;
}

export const runtimeFile = (dataDir: string) => join(dataDir, 'daemon.json');

export function writeRuntimeInfo(dataDir: string, info: RuntimeInfo): void {
  const file = runtimeFile(dataDir);
  // Write then rename so a reader never sees half a file.
  writeFileSync(`${file}.tmp`, JSON.stringify(info, null, 2) + '\n', { mode: 0o600 });
  renameSync(`${file}.tmp`, file);
}

export function readRuntimeInfo(dataDir: string): RuntimeInfo | undefined {
  try {
    return JSON.parse(readFileSync(runtimeFile(dataDir), 'utf8')) as RuntimeInfo;
  } catch {
    return undefined;
  }
}

/** Removes the file only when it still describes this process. */
export function removeRuntimeInfo(dataDir: string, pid = process.pid): void {
  if (readRuntimeInfo(dataDir)?.pid === pid) rmSync(runtimeFile(dataDir), { force: true });
}
