// TLS material for MQTT clients (the daemon's, `brainstem sim`): PEM files read at connect time,
// errors naming the setting and the file.
import { readFileSync } from 'node:fs';

export interface TlsPaths {
  ca: string;
  cert: string;
  key: string;
}

export interface TlsFiles {
  ca?: Buffer;
  cert?: Buffer;
  key?: Buffer;
}

/** Reads the non-empty paths; `name(k)` names the setting in errors (e.g. mqtt.tls.ca, --ca). */
export function readTlsFiles(paths: Partial<TlsPaths>, name: (k: keyof TlsPaths) => string): TlsFiles {
  const out: TlsFiles = {};
  for (const k of ['ca', 'cert', 'key'] as const) {
    const path = paths[k];
    if (!path) continue;
    try {
      out[k] = readFileSync(path);
    } catch (err) {
      throw new Error(
        `${name(k)}: cannot read ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
      );
    }
  }
  return out;
}
