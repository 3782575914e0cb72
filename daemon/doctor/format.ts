// Human-readable doctor output (the --json form is the DoctorReport itself).
import type { DoctorReport } from './report.js';

const gib = (b: number | null) => (b === null ? '?' : `${(b / 1024 ** 3).toFixed(1)} GiB`);
const yesNo = (v: boolean | null) => (v === null ? 'unknown' : v ? 'yes' : 'no');

export function formatDoctorReport(r: DoctorReport): string {
  const lines: string[] = [];
  const cores =
    r.cpu.performance_cores !== undefined
      ? `${r.cpu.cores} cores (${r.cpu.performance_cores} performance + ${r.cpu.efficiency_cores} efficiency)`
      : `${r.cpu.cores} cores`;
  lines.push(`CPU        ${r.cpu.model}, ${cores}  [${r.platform}/${r.arch}]`);
  if (r.cpu.jetson) {
    const j = r.cpu.jetson;
    lines.push(
      `Jetson     ${j.model}${j.l4t ? `, L4T ${j.l4t}` : ''}${j.jetpack_major ? ` (JetPack ${j.jetpack_major})` : ''}${j.cuda_arch ? `, ${j.cuda_arch}` : ''}`,
    );
  }
  lines.push(
    `Memory     ${gib(r.memory.total_bytes)} total, ${gib(r.memory.available_bytes)} available, unified: ${yesNo(r.memory.unified)}`,
  );
  lines.push('Disks');
  for (const f of r.disks.filesystems)
    lines.push(
      `  ${f.mount.padEnd(20)} ${gib(f.free_bytes)} free of ${gib(f.size_bytes)}  ${f.device} (${f.type}), NVMe: ${yesNo(f.nvme)}`,
    );
  for (const p of r.disks.physical)
    lines.push(`  disk ${p.device || p.name}: ${p.type} ${p.interface} ${gib(p.size_bytes)}, NVMe: ${yesNo(p.nvme)}`);
  const d = r.disks.data_dir;
  lines.push(`  data_dir ${d.path} on ${d.mount ?? '?'}: ${gib(d.free_bytes)} free, NVMe: ${yesNo(d.nvme)}`);
  if (r.native.built) {
    lines.push(`Native     addon ${r.native.version}, CPU features: ${r.native.cpu_features}`);
    for (const b of r.native.backends)
      lines.push(
        `  ${b.name.padEnd(6)} compiled: ${yesNo(b.compiled)}, usable: ${yesNo(b.usable)}${b.detail ? `  (${b.detail})` : ''}`,
      );
  } else lines.push(`Native     not available: ${r.native.error}`);
  for (const p of [r.recommended_profile, ...r.model_profiles]) {
    if ('error' in p) {
      lines.push(`Profile    ${p.model}: geometry not readable (${p.error})`);
      continue;
    }
    const c = p.profile;
    lines.push(
      `Profile    ${p.model}: ${p.name} under ${gib(p.budget_bytes)} (${p.budget_source}): prefill ${c.prefill_path}, decode ${c.decode_path}, ${c.io_mode} reads, ${c.io_threads} I/O threads`,
    );
    lines.push(
      `           if chosen: staged slots ${c.slots}, hot cache ${gib(c.cache_bytes)}; prerouter ${c.prerouter}`,
    );
    for (const why of p.reasons) lines.push(`           ${why}`);
  }
  lines.push('           (start and bench decode choose this by themselves; engine.* / models.<name>.* keys override)');
  const v = r.vision;
  lines.push(
    v.onnxruntime
      ? `Vision     onnxruntime-node ${v.onnxruntime}: towers run on ${v.provider} (${v.why})`
      : `Vision     onnxruntime-node not available: ${v.error}`,
  );
  for (const m of v.models)
    lines.push(
      `  ${m.name.padEnd(12)} ${m.inputs.join(' + ')}${m.vision?.missing ? `  (vision_config but ${m.vision.missing})` : ''}  ${m.path}`,
    );
  return lines.join('\n') + '\n';
}
