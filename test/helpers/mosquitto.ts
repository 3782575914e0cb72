// A real Mosquitto broker for integration tests: BRAINSTEM_TEST_MOSQUITTO_URL when set (CI
// starts one), else a private `mosquitto` on a free port with a generated password file.
// Without a mosquitto binary the test is skipped locally but fails when CI=true.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mosquittoPasswordLine } from '../../daemon/mqtt/identities.js';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import { freePort, waitForPort } from './ports.js';
import { tempDir } from './temp.js';

export interface BrokerEndpoint {
  /** mqtt://host:port without credentials. */
  url: string;
  username: string;
  password: string;
  /** mqtt://user:pass@host:port, for mqtt.url. */
  urlWithCredentials: string;
  stop(): Promise<void>;
}

const SEARCH = ['/usr/sbin', '/usr/local/sbin', '/opt/homebrew/sbin', '/usr/bin', '/usr/local/bin'];

export function findMosquitto(): string | undefined {
  const dirs = [...(process.env.PATH ?? '').split(':').filter(Boolean), ...SEARCH];
  return dirs.map((d) => join(d, 'mosquitto')).find((p) => existsSync(p));
}

function fromUrl(raw: string): BrokerEndpoint {
  const u = new URL(raw);
  const username = decodeURIComponent(u.username);
  const password = decodeURIComponent(u.password);
  u.username = '';
  u.password = '';
  return {
    url: u.toString().replace(/\/$/, ''),
    username,
    password,
    urlWithCredentials: raw,
    stop: async () => undefined,
  };
}

/** Files for a private Mosquitto: password_file (default: one for brainstem-test), acl_file, TLS. */
export interface MosquittoFiles {
  passwordFile?: string;
  aclFile?: string;
  /** PEM files: the listener speaks TLS only (mqtts://). */
  tls?: { cafile: string; certfile: string; keyfile: string };
  /** More mosquitto.conf lines (after the listener). */
  conf?: string;
}

async function spawnMosquitto(binary: string, files?: MosquittoFiles): Promise<BrokerEndpoint> {
  const dir = tempDir('brainstem-mosquitto-');
  const username = 'brainstem-test';
  const password = randomBytes(12).toString('hex');
  const passwordFile = files?.passwordFile ?? join(dir.path, 'passwd');
  if (!files?.passwordFile)
    writeFileSync(passwordFile, mosquittoPasswordLine(username, password) + '\n', { mode: 0o600 });
  const acl = files?.aclFile ? `acl_file ${files.aclFile}\n` : '';
  const tls = files?.tls
    ? `cafile ${files.tls.cafile}\ncertfile ${files.tls.certfile}\nkeyfile ${files.tls.keyfile}\n`
    : '';
  const scheme = files?.tls ? 'mqtts' : 'mqtt';
  let lastError = '';
  for (let attempt = 0; attempt < 3; attempt++) {
    const port = await freePort();
    const conf = join(dir.path, 'mosquitto.conf');
    // As root Mosquitto drops to user "mosquitto", which cannot read our 0700 temp dir.
    const asRoot = process.getuid?.() === 0 ? 'user root\n' : '';
    writeFileSync(
      conf,
      `${asRoot}listener ${port} 127.0.0.1\nallow_anonymous false\npassword_file ${passwordFile}\n${acl}${tls}${files?.conf ?? ''}persistence false\nlog_dest stderr\n`,
    );
    const child: ChildProcess = spawn(binary, ['-c', conf], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    try {
      await waitForPort('127.0.0.1', port, 5000, () => child.exitCode === null);
      const url = `${scheme}://127.0.0.1:${port}`;
      return {
        url,
        username,
        password,
        urlWithCredentials: `${scheme}://${username}:${password}@127.0.0.1:${port}`,
        stop: async () => {
          if (child.exitCode === null) child.kill('SIGTERM');
          await exited;
          dir.remove();
        },
      };
    } catch {
      if (child.exitCode === null) child.kill('SIGKILL');
      await exited;
      lastError = stderr.trim();
    }
  }
  dir.remove();
  throw new Error(`mosquitto did not start: ${lastError}`);
}

/** A private Mosquitto with these files (never CI's shared one), or undefined after t.skip(). */
export async function getOwnMosquitto(t: TestContext, files: MosquittoFiles): Promise<BrokerEndpoint | undefined> {
  const binary = findMosquitto();
  if (binary) return spawnMosquitto(binary, files);
  if (process.env.CI === 'true') throw new Error('CI=true but mosquitto is not installed (.ci/run installs it)');
  t.skip('mosquitto is not installed (apt-get install mosquitto / brew install mosquitto)');
  return undefined;
}

/** The broker, or undefined after t.skip() when none is available outside CI. Call stop() in t.after. */
export async function getMosquitto(t: TestContext): Promise<BrokerEndpoint | undefined> {
  const fromEnv = process.env.BRAINSTEM_TEST_MOSQUITTO_URL;
  if (fromEnv) return fromUrl(fromEnv);
  const binary = findMosquitto();
  if (binary) return spawnMosquitto(binary);
  if (process.env.CI === 'true')
    throw new Error(
      'CI=true but mosquitto is not installed and BRAINSTEM_TEST_MOSQUITTO_URL is not set (.ci/run installs it)',
    );
  t.skip('mosquitto is not installed (apt-get install mosquitto / brew install mosquitto)');
  return undefined;
}
