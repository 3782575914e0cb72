// Generated demonstration inputs for the context compiler tests: frame folders of solid grey
// scenes (made with sharp) and action logs with known gripper commands.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import sharp from 'sharp';

/** Writes frame_000.png … with the grey level of each frame (64×48 PNG). */
export async function writeGreyFrames(dir: string, levels: number[]): Promise<string> {
  mkdirSync(dir, { recursive: true });
  const png = new Map<number, Buffer>();
  for (const [i, g] of levels.entries()) {
    if (!png.has(g))
      png.set(
        g,
        await sharp({ create: { width: 64, height: 48, channels: 3, background: { r: g, g, b: g } } })
          .png()
          .toBuffer(),
      );
    writeFileSync(join(dir, `frame_${String(i).padStart(3, '0')}.png`), png.get(g)!);
  }
  return dir;
}

/**
 * The hand-computed video, 60 frames at 10 fps: scenes change at 15, 27, 38 and 52 (and, smaller, at 5);
 * frame 30 differs from its neighbours by one grey level; 52..56 are a near-duplicate of 57..59.
 */
export function demoLevels(): number[] {
  return Array.from({ length: 60 }, (_, i) => {
    if (i < 5) return 40;
    if (i < 15) return 100;
    if (i < 27) return 200;
    if (i < 38) return i === 30 ? 81 : 80;
    if (i < 52) return 230;
    return i < 57 ? 43 : 45;
  });
}

/**
 * The demo's action log: arm "left" at t = k/10 for k = 0..59 plus 6.3 and 6.4 (no frame within 0.1 s);
 * gripper_cmd 1 until 1.5 s, 0 (closing = contact) until 3.8 s, then 1 (release); segment "reach" before 3 s, then "place".
 */
export function demoActions(): Record<string, unknown>[] {
  const rows: Record<string, unknown>[] = [];
  for (const t of [...Array.from({ length: 60 }, (_, k) => k / 10), 6.3, 6.4]) {
    const cmd = t < 1.5 ? 1 : t < 3.8 ? 0 : 1;
    rows.push({
      t,
      arm: 'left',
      joints: [t / 10, 0.5, -0.25],
      tcp: [0.3, 0, 0.2, 0, 0, 0, 1],
      gripper: cmd === 0 ? 0.2 : 1,
      gripper_cmd: cmd,
      joint_cmd: [t / 10 + 0.01, 0.5, -0.25],
      segment: t < 3 ? 'reach' : 'place',
    });
  }
  return rows;
}

export function writeJsonl(path: string, rows: Record<string, unknown>[]): string {
  writeFileSync(path, rows.map((r) => JSON.stringify(r)).join('\n') + '\n');
  return path;
}

export function writeCsv(path: string, rows: Record<string, unknown>[]): string {
  const header = [
    't',
    'arm',
    'joints.0',
    'joints.1',
    'joints.2',
    'tcp.0',
    'tcp.1',
    'tcp.2',
    'tcp.3',
    'tcp.4',
    'tcp.5',
    'tcp.6',
  ];
  header.push('gripper', 'gripper_cmd', 'joint_cmd.0', 'joint_cmd.1', 'joint_cmd.2', 'segment');
  const cell = (r: Record<string, unknown>, col: string) => {
    const [name, idx] = col.split('.');
    const v = idx === undefined ? r[name!] : (r[name!] as unknown[] | undefined)?.[Number(idx)];
    return v === undefined ? '' : String(v);
  };
  writeFileSync(
    path,
    [header.join(','), ...rows.map((r) => header.map((c) => cell(r, c)).join(','))].join('\n') + '\n',
  );
  return path;
}
