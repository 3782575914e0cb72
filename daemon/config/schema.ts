// The one schema for the whole daemon. Its docs generate docs/config.md (daemon/config/docs.ts);
// configs/brainstem.yaml documents every key too, and tests keep both in agreement with it.
import { bool, int, list, obj, oneOf, record, str, type Infer } from '../../robot/common/validation/builders.js';
import { ROBOT_ID_PATTERN } from '../../robot/link/protocol.js';
import { daemonUsernameProblem } from '../mqtt/acl.js';
import type { Issue } from '../../robot/common/validation/issue.js';
import { sections } from './sections.js';
import { urlCredentials } from './url-secrets.js';

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

const port = (def: number, doc: string) => int({ min: 0, max: 65535, default: def, doc });

/** The URL schemes mqtt.js dials (tcp and tls are its names for mqtt and mqtts). */
export const MQTT_SCHEMES = ['mqtt:', 'mqtts:', 'tcp:', 'tls:', 'ws:', 'wss:'];

function brokerUrlRule(s: string): string | undefined {
  if (s === '') return undefined;
  let u: URL;
  try {
    u = new URL(s);
  } catch {
    return 'must be empty or a URL like mqtt://host:1883';
  }
  if (!MQTT_SCHEMES.includes(u.protocol))
    return `must use one of the schemes ${MQTT_SCHEMES.map((p) => p.slice(0, -1)).join(', ')}`;
  if (!u.hostname) return 'must name a host';
  if (!urlCredentials(u)) return 'must percent-encode its user name and password (write % as %25)';
  return undefined;
}

const HOST_NAME = /^(?=.{1,253}$)[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$/i;

function hostNameRule(s: string): string | undefined {
  return HOST_NAME.test(s) ? undefined : 'must be a host name like robot-pc.lan (letters, digits, - and .; no port)';
}

const ORIGIN = /^https?:\/\/[^/?#@\s]+$/i;

function originRule(s: string): string | undefined {
  return ORIGIN.test(s)
    ? undefined
    : 'must be a browser origin like http://robot-pc.lan:3000 (scheme, host, port; no path)';
}

function topicBaseRule(s: string): string | undefined {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: NUL is one of the characters refused
  if (/[+#\u0000]/.test(s)) return 'must not contain MQTT wildcards (+, #) or NUL';
  if (s.startsWith('$')) return 'must not start with "$" (reserved for broker topics)';
  if (s.split('/').some((level) => level === ''))
    return 'must not have empty levels (no leading, trailing or double "/")';
  return undefined;
}

/** A TLS certificate comes with its key: both set or neither. */
function certWithKey(v: { cert: string; key: string }, path: string, issues: Issue[]): void {
  if ((v.cert === '') !== (v.key === ''))
    issues.push({
      path: `${path}.${v.cert ? 'key' : 'cert'}`,
      rule: 'must be set with the other of cert/key',
      value: '',
    });
}

export const daemonSchema = obj({
  data_dir: str({
    nonEmpty: true,
    default: '~/.brainstem',
    doc: 'state directory: generated secrets, runtime file (daemon.json), the demo model; "~" = home, relative = from the working directory',
  }),
  server: obj(
    {
      host: str({ nonEmpty: true, default: '127.0.0.1', doc: 'HTTP/WebSocket bind address' }),
      port: port(7777, 'HTTP/WebSocket port (0 picks a free port, written to <data_dir>/daemon.json)'),
      allowed_hosts: list(str({ nonEmpty: true, rule: hostNameRule }), {
        doc: 'DNS names clients may use in the Host header besides loopback names, IP addresses (when server.host is off loopback), server.host and the machine hostname; other names are refused with 421 (DNS rebinding)',
      }),
      allowed_origins: list(str({ nonEmpty: true, rule: originRule }), {
        doc: "browser origins whose pages may open WebSocket endpoints besides the daemon's own (the console); another origin's upgrade is refused with 403 before its token is checked, so a page the operator visits can neither guess tokens nor spend the token rate limit",
      }),
      token: str({
        default: '',
        secret: true,
        doc: 'API token: HTTP takes it as Authorization: Bearer, WebSocket upgrades also as ?token=; empty = generated once and stored in <data_dir>/token (32 characters); at least 16 characters off loopback',
      }),
      max_message_bytes: int({
        min: 1024,
        max: 1 << 30,
        default: 4 << 20,
        doc: 'largest WebSocket message or HTTP body accepted, in bytes',
      }),
      ws_heartbeat_ms: int({
        min: 100,
        max: 3_600_000,
        default: 30_000,
        doc: 'WebSocket ping interval; a client that missed the previous pong is disconnected',
      }),
      max_batch_calls: int({
        min: 1,
        max: 100_000,
        default: 1000,
        doc: 'most calls in one JSON-RPC batch; a longer batch is refused whole with -32600',
      }),
      max_subscriptions: int({
        min: 1,
        max: 10_000,
        default: 16,
        doc: 'live subscriptions (system.subscribe, robots.state) one WebSocket client may hold; one more is -32600',
      }),
      max_subscriptions_total: int({
        min: 1,
        max: 100_000,
        default: 256,
        doc: 'live subscriptions of all WebSocket clients together; one more is -32600',
      }),
      max_json_depth: int({
        min: 2,
        max: 10_000,
        default: 64,
        doc: 'deepest nesting of arrays and objects in a JSON-RPC message or HTTP JSON body (-32600 / HTTP 400 past it)',
      }),
      http_stall_ms: int({
        min: 100,
        max: 3_600_000,
        default: 60_000,
        doc: 'how long a streamed HTTP reply may wait for its client to read, in all (a client that stopped reading, or one that reads a little now and then); then the request is cancelled (its model freed for the next) and the connection closed',
      }),
      ws_pause_bytes: int({
        min: 1024,
        max: 1 << 30,
        default: 1 << 20,
        doc: "a WebSocket client's unsent replies above which its messages are not read until they drain below it",
      }),
      ws_max_buffered_bytes: int({
        min: 1024,
        max: 1 << 30,
        default: 16 << 20,
        doc: 'unsent replies above which a WebSocket client that does not read is disconnected (close code 1008)',
      }),
      ws_total_buffered_bytes: int({
        min: 1024,
        max: 2 ** 40,
        default: 128 << 20,
        doc: "all WebSocket clients' unsent replies and unanswered messages together, above which the client holding the most is disconnected (close code 1008)",
      }),
      console: obj(
        {
          enabled: bool({ default: true, doc: 'serve the operator console (a web page) at / (docs/console.md)' }),
          session_ttl_s: int({
            min: 60,
            max: 30 * 86_400,
            default: 43_200,
            doc: 'how long a console login (an HttpOnly session cookie, never the token itself) stays valid, in seconds',
          }),
        },
        { doc: 'The operator console: a web page served at / that logs in with the API token' },
      ),
    },
    {
      doc: 'The HTTP and WebSocket server (OpenAI-compatible routes, JSON-RPC)',
      refine: (v, path, issues: Issue[]) => {
        if (v.ws_pause_bytes > v.ws_max_buffered_bytes)
          issues.push({
            path: `${path}.ws_pause_bytes`,
            rule: `must be <= ${path}.ws_max_buffered_bytes (${v.ws_max_buffered_bytes})`,
            value: v.ws_pause_bytes,
          });
        if (v.max_subscriptions > v.max_subscriptions_total)
          issues.push({
            path: `${path}.max_subscriptions`,
            rule: `must be <= ${path}.max_subscriptions_total (${v.max_subscriptions_total})`,
            value: v.max_subscriptions,
          });
        if (v.ws_max_buffered_bytes > v.ws_total_buffered_bytes)
          issues.push({
            path: `${path}.ws_max_buffered_bytes`,
            rule: `must be <= ${path}.ws_total_buffered_bytes (${v.ws_total_buffered_bytes})`,
            value: v.ws_max_buffered_bytes,
          });
      },
    },
  ),
  mqtt: obj(
    {
      url: str({
        default: '',
        rule: brokerUrlRule,
        doc: 'external broker, e.g. mqtt://user:pass@host:1883 (schemes mqtt, mqtts, tcp, tls, ws, wss); empty = run the embedded broker',
      }),
      embedded: obj({
        host: str({ nonEmpty: true, default: '127.0.0.1', doc: 'embedded broker bind address' }),
        port: port(1883, 'embedded broker port (0 picks a free port)'),
        tls: obj(
          {
            cert: str({ default: '', doc: 'PEM server certificate; set with key to add an MQTT-over-TLS listener' }),
            key: str({ default: '', doc: 'PEM private key of mqtt.embedded.tls.cert' }),
            host: str({
              nonEmpty: true,
              default: '127.0.0.1',
              doc: 'TLS listener bind address (0.0.0.0 serves the LAN)',
            }),
            port: port(8883, 'TLS listener port (0 picks a free port)'),
          },
          {
            doc: 'an mqtts:// listener of the embedded broker beside the plain loopback one, for controllers on other machines',
            refine: certWithKey,
          },
        ),
      }),
      username: str({
        default: 'brainstem',
        doc: "the daemon's MQTT identity (credentials in mqtt.url win); with the embedded broker letters, digits, _ and -, not robot or observer",
      }),
      password: str({
        default: '',
        secret: true,
        doc: "the daemon's MQTT password; empty = generated once in <data_dir>/mqtt-password (with an external broker: used when that file exists); at least 16 characters when the broker is off loopback",
      }),
      observers: list(
        str({
          nonEmpty: true,
          rule: (s) => (new RegExp(ROBOT_ID_PATTERN).test(s) ? undefined : `must match ${ROBOT_ID_PATTERN}`),
        }),
        {
          doc: 'read-only MQTT identities observer.<name> for apps and dashboards; each secret is generated once in <data_dir>/mqtt-identities/observer.<name>',
        },
      ),
      tls: obj(
        {
          ca: str({
            default: '',
            doc: 'PEM file of the CA that signed the broker certificate; empty = the system CAs',
          }),
          cert: str({ default: '', doc: 'PEM client certificate, for brokers that require one (with mqtt.tls.key)' }),
          key: str({ default: '', doc: 'PEM private key of mqtt.tls.cert' }),
        },
        {
          doc: 'TLS for an mqtts:// (or tls://, wss://) mqtt.url; the daemon and its simulated controllers use it',
          refine: certWithKey,
        },
      ),
      base: str({
        nonEmpty: true,
        default: 'brainstem',
        rule: topicBaseRule,
        doc: 'topic prefix (no wildcards, no empty levels, not "$...")',
      }),
      protocol: oneOf(['auto', '5', '3.1.1'], {
        default: 'auto',
        doc: 'MQTT version of the daemon client: auto (5, falling back to 3.1.1 when the broker refuses 5), 5 or 3.1.1; the embedded broker speaks 3.1.1',
      }),
      reconnect: obj(
        {
          min_ms: int({ min: 10, max: 600_000, default: 500, doc: 'first reconnect delay (at most max_ms)' }),
          max_ms: int({
            min: 10,
            max: 600_000,
            default: 30_000,
            doc: 'longest reconnect delay; delays double per failed attempt, jittered to [½, 1] of the step',
          }),
        },
        {
          refine: (v, path, issues: Issue[]) => {
            if (v.min_ms > v.max_ms)
              issues.push({ path: `${path}.min_ms`, rule: `must be <= ${path}.max_ms (${v.max_ms})`, value: v.min_ms });
          },
        },
      ),
    },
    {
      doc: 'The MQTT broker (embedded or external) and the daemon client that robot controllers talk through',
      refine: (v, path, issues) => {
        if (v.url !== '') return;
        const userProblem = daemonUsernameProblem(v.username);
        if (userProblem)
          issues.push({
            path: `${path}.username`,
            rule: `${userProblem} when the embedded broker runs (mqtt.url is empty)`,
            value: v.username,
          });
        if (v.protocol === '5')
          issues.push({
            path: `${path}.protocol`,
            rule: 'must be "auto" or "3.1.1" with the embedded broker (it speaks MQTT 3.1.1)',
            value: v.protocol,
          });
      },
    },
  ),
  logging: obj(
    {
      level: oneOf(LOG_LEVELS, { default: 'info', doc: 'default log level' }),
      format: oneOf(['auto', 'json', 'pretty'], {
        default: 'auto',
        doc: 'auto = pretty on a terminal, JSON lines otherwise',
      }),
      levels: record(oneOf(LOG_LEVELS), {
        doc: 'level per namespace, e.g. {mqtt: debug, api.rpc: trace}; a namespace covers its children (daemon, api.http, api.rpc, mqtt.broker, mqtt.client)',
      }),
    },
    { doc: 'Log output (pino)' },
  ),
  ...sections,
});

export type Config = Infer<typeof daemonSchema>;
export type ServerConfig = Config['server'];
export type MqttConfig = Config['mqtt'];
export type LoggingConfig = Config['logging'];
export type LogLevel = (typeof LOG_LEVELS)[number];
