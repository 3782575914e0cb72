// `brainstem config check FILE`: validates FILE merged over the defaults and the BRAINSTEM_*
// environment, exactly as `start` would. Exit 0 when valid, 2 with every problem listed.
import type { Command } from 'commander';
import { stringify } from 'yaml';
import { loadConfig } from '../config/load.js';
import { checkSecretStrength } from '../config/secret-strength.js';
import { redactConfig } from '../config/secrets.js';
import { group } from './group.js';

export function registerConfigCheck(program: Command): void {
  group(program, 'config')
    .command('check')
    .description('validate a config file (merged over the defaults and BRAINSTEM_* variables)')
    .argument('<file>', 'YAML config file')
    .option('--print', 'print the effective configuration (secrets masked)')
    .action((file: string, opts: { print?: boolean }) => {
      const config = loadConfig({ file });
      for (const w of checkSecretStrength(config).warnings) process.stderr.write(`warning: ${w}\n`);
      process.stdout.write(opts.print ? stringify(redactConfig(config)) : `${file}: valid\n`);
    });
}
