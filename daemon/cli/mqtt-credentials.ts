// `brainstem mqtt credentials --out DIR`: for an external Mosquitto, a password_file and an
// acl_file with one user per identity of the config (daemon, robot.<id>, observer.<name>) and
// the same grants the embedded broker enforces, and the mosquitto.conf lines that bind client ids
// to identities. Secrets are generated in data_dir when missing
// and never printed.
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Command } from 'commander';
import { loadConfig } from '../config/load.js';
import { daemonUsernameProblem, mosquittoAcl } from '../mqtt/acl.js';
import { identitySecretPath, mosquittoPasswordLine, mqttIdentities } from '../mqtt/identities.js';
import { maxPacketBytes } from '../mqtt/broker.js';
import { CliError } from './exit.js';
import { group } from './group.js';

/**
 * The mosquitto.conf lines for the files. use_username_as_clientid binds a client id to its
 * identity (the id becomes the username): no client can knock another identity's off by reusing
 * its id. The cost: one connection per identity at a time (a second one replaces the first).
 */
export function mosquittoConf(passwd: string, acl: string, maxPacketBytes: number): string {
  return [
    '# brainstem identities (written by `brainstem mqtt credentials`); docs/protocol.md, "Security".',
    'allow_anonymous false',
    `password_file ${passwd}`,
    `acl_file ${acl}`,
    '# Each client id is replaced by its username: no client id takeover across identities.',
    'use_username_as_clientid true',
    '# A camera frame or the largest trajectory with its topic and header; a larger packet closes the connection.',
    `max_packet_size ${maxPacketBytes}`,
    '',
  ].join('\n');
}

export function registerMqttCredentials(program: Command): void {
  group(program, 'mqtt')
    .command('credentials')
    .description('write a Mosquitto password file and ACL file for the daemon, each controller and observer')
    .requiredOption('-o, --out <dir>', 'directory for passwd, acl and brainstem.conf (created; passwd gets mode 0600)')
    .option('-c, --config <file>', 'config file merged over configs/brainstem.yaml')
    .action((opts: { out: string; config?: string }) => {
      const config = loadConfig({ file: opts.config });
      const identities = mqttIdentities(config, true);
      const daemon = identities[0]!;
      const problem = daemonUsernameProblem(daemon.username);
      if (problem) throw new CliError(`mqtt.username: ${problem}, got ${JSON.stringify(daemon.username)}`, 2);
      if (!daemon.password)
        throw new CliError('the daemon has no MQTT password: set mqtt.password or put it in mqtt.url', 2);
      const out = resolve(opts.out);
      mkdirSync(out, { recursive: true });
      const passwd = join(out, 'passwd');
      const acl = join(out, 'acl');
      writeFileSync(passwd, identities.map((i) => mosquittoPasswordLine(i.username, i.password)).join('\n') + '\n', {
        mode: 0o600,
      });
      chmodSync(passwd, 0o600);
      writeFileSync(acl, mosquittoAcl(config.mqtt.base, identities));
      const conf = join(out, 'brainstem.conf');
      // The whole packet: what the embedded broker allows after the fixed header, plus that header (≤ 5 bytes).
      const text = mosquittoConf(passwd, acl, maxPacketBytes(config.robots.cameras.max_frame_bytes) + 5);
      writeFileSync(conf, text);
      const where = (u: string) =>
        u === daemon.username
          ? 'mqtt.password or <data_dir>/mqtt-password'
          : join(config.data_dir, identitySecretPath(u));
      process.stdout.write(
        [
          `wrote ${passwd}, ${acl} and ${conf} for base ${config.mqtt.base}; in mosquitto.conf (or the directory of an include_dir):`,
          ...text
            .split('\n')
            .filter((l) => l && !l.startsWith('#'))
            .map((l) => `  ${l}`),
          'identities (secret in):',
          ...identities.map((i) => `  ${i.username} (${i.role.kind}): ${where(i.username)}`),
          '',
        ].join('\n'),
      );
    });
}
