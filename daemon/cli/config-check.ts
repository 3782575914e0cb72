// `brainstem config check FILE`: validates FILE merged over the defaults and the BRAINSTEM_*
// environment, exactly as `start` would. Exit 0 when valid, 2 with every problem listed.
import type { Command } from 'commander';
import { stringify } from 'yaml';
import { ConfigError, formatConfigIssues, loadConfig } from '../config/load.js';
import { checkSecretStrength } from '../config/secret-strength.js';
import { redactConfig, storedSecret } from '../config/secrets.js';
import { identitySecrets, mqttIdentities } from '../mqtt/identities.js';
import { group } from './group.js';

export function registerConfigCheck(program: Command): void {
  group(program, 'config')
    .command('check')
    .description('validate a config file (merged over the defaults and BRAINSTEM_* variables)')
    .argument('<file>', 'YAML config file')
    .option('--print', 'print the effective configuration (secrets masked)')
    .action((file: string, opts: { print?: boolean }) => {
      const config = loadConfig({ file });
      // The secrets stored in data_dir are checked as start checks them (nothing is generated here).
      const token = config.server.token || storedSecret(config.data_dir, 'token');
      const identities = mqttIdentities(config, false);
      const mqttPassword = config.mqtt.url === '' ? identities[0]!.password : '';
      const strength = checkSecretStrength(config, {
        ...(token ? { 'server.token': token } : {}),
        ...(mqttPassword ? { 'mqtt.password': mqttPassword } : {}),
        ...identitySecrets(identities),
      });
      if (strength.issues.length) throw new ConfigError(formatConfigIssues(strength.issues));
      for (const w of strength.warnings) process.stderr.write(`warning: ${w}\n`);
      process.stdout.write(opts.print ? stringify(redactConfig(config)) : `${file}: valid\n`);
    });
}
