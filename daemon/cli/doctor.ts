// `brainstem doctor [--json]`: CPU, memory, disks, native backends and a recommended profile.
import type { Command } from 'commander';
import { loadConfig } from '../config/load.js';
import { formatDoctorReport } from '../doctor/format.js';
import { gatherDoctorReport } from '../doctor/report.js';

export function registerDoctor(program: Command): void {
  program
    .command('doctor')
    .description('report what this machine offers for running models (CPU, memory, disks, native backends)')
    .option('--json', 'print the report as JSON')
    .option('-c, --config <file>', 'config file (for data_dir)')
    .action(async (opts: { json?: boolean; config?: string }) => {
      const config = loadConfig({ file: opts.config });
      const report = await gatherDoctorReport(config.data_dir, undefined, config.models);
      process.stdout.write(opts.json ? JSON.stringify(report, null, 2) + '\n' : formatDoctorReport(report));
      if (!report.native.built) process.stderr.write(`note: ${report.native.error}\n`);
    });
}
