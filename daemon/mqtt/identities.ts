// The broker identities of a config: the daemon (credentials in mqtt.url, else mqtt.username with
// mqtt.password or the generated <data_dir>/mqtt-password), a controller per robot served over
// MQTT (`robot.<id>`) and an observer per mqtt.observers name (`observer.<name>`), each with its
// own secret generated once in <data_dir>/mqtt-identities/<username>.
import { pbkdf2Sync, randomBytes } from 'node:crypto';
import { resolveSecret, storedSecret } from '../config/secrets.js';
import type { Config } from '../config/schema.js';
import { IDENTITY_FILES } from '../config/secret-strength.js';
import { urlCredentials } from '../config/url-secrets.js';
import { controllerUsername, observerUsername, type Identity } from './acl.js';

/** Where the secret of a non-daemon identity is kept, relative to data_dir. */
export const identitySecretPath = (username: string) => `mqtt-identities/${username}`;

/**
 * `create`: generate missing secrets (the embedded broker, `brainstem mqtt credentials`); else
 * (an external broker) use the stored ones and leave out identities that have none.
 */
export function mqttIdentities(config: Config, create: boolean): Identity[] {
  const secret = (configured: string, name: string) =>
    configured || (create ? resolveSecret('', config.data_dir, name).value : storedSecret(config.data_dir, name));
  // loadConfig refused a URL that does not parse or decode; one built by hand has no identity in it.
  const fromUrl = URL.canParse(config.mqtt.url) ? urlCredentials(new URL(config.mqtt.url)) : undefined;
  const daemon: Identity = fromUrl?.username
    ? { username: fromUrl.username, password: fromUrl.password, role: { kind: 'daemon' } }
    : {
        username: config.mqtt.username,
        password: secret(config.mqtt.password, 'mqtt-password') ?? '',
        role: { kind: 'daemon' },
      };
  const others: Identity[] = [];
  const add = (username: string, role: Identity['role']) => {
    const password = secret('', identitySecretPath(username));
    if (password) others.push({ username, password, role });
  };
  for (const r of config.robots.serve)
    if (r.transport === 'mqtt') add(controllerUsername(r.id), { kind: 'controller', robot: r.id });
  for (const name of config.mqtt.observers) add(observerUsername(name), { kind: 'observer', name });
  return [daemon, ...others];
}

/** The controllers' and observers' secrets keyed for checkSecretStrength (hand-written files are judged too). */
export function identitySecrets(identities: Identity[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const i of identities) if (i.role.kind !== 'daemon') out[IDENTITY_FILES + i.username] = i.password;
  return out;
}

/** A Mosquitto 2 password_file line: `$7$` = PBKDF2-HMAC-SHA512, 101 iterations, 12-byte salt, 64-byte hash. */
export function mosquittoPasswordLine(username: string, password: string): string {
  const salt = randomBytes(12);
  const hash = pbkdf2Sync(password, salt, 101, 64, 'sha512');
  return `${username}:$7$101$${salt.toString('base64')}$${hash.toString('base64')}`;
}
