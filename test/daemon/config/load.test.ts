import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, loadConfig } from '../../../daemon/config/load.js';
import { tempDir } from '../../helpers/temp.js';

function configError(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof ConfigError, `expected ConfigError, got ${(err as Error).stack}`);
    assert.equal(err.exitCode, 2);
    return err.message;
  }
  assert.fail('expected a ConfigError');
}

function withFile(text: string, fn: (file: string) => void): void {
  const dir = tempDir();
  try {
    const file = join(dir.path, 'user.yaml');
    writeFileSync(file, text);
    fn(file);
  } finally {
    dir.remove();
  }
}

test('defaults come from configs/brainstem.yaml', () => {
  const c = loadConfig({ env: {} });
  assert.equal(c.server.host, '127.0.0.1');
  assert.equal(c.server.port, 7777);
  assert.equal(c.server.token, '');
  assert.equal(c.server.max_message_bytes, 4 * 1024 * 1024);
  assert.equal(c.mqtt.url, '');
  assert.deepEqual(c.mqtt.embedded, {
    host: '127.0.0.1',
    port: 1883,
    tls: { cert: '', key: '', host: '127.0.0.1', port: 8883 },
  });
  assert.equal(c.mqtt.username, 'brainstem');
  assert.equal(c.mqtt.base, 'brainstem');
  assert.equal(c.mqtt.protocol, 'auto');
  assert.deepEqual(c.mqtt.reconnect, { min_ms: 500, max_ms: 30000 });
  assert.deepEqual(c.logging, { level: 'info', format: 'auto', levels: {} });
  assert.deepEqual(c.engine, {
    keep_alive: '5m',
    queue_size: 8,
    queue_per_client: 2,
    threads: 0,
    context_length: 0,
    sessions: 4,
    demo_model: true,
    prefill_path: 'auto',
    decode_path: 'auto',
    slots: 0,
    cache_bytes: 0,
    io_threads: 0,
    io_mode: 'auto',
    device_expert_bytes: 0,
    prerouter: 'off',
    vision: {
      threads: 0,
      provider: 'auto',
      max_pixels: 0,
      max_input_pixels: 40_000_000,
      max_image_bytes: 20 * 1024 * 1024,
      max_images: 64,
      cache_images: 16,
    },
  });
  assert.deepEqual(c.models, {});
  assert.deepEqual(JSON.parse(JSON.stringify(c.robots.serve)), [
    { id: 'yam', robot: 'yam', transport: 'mqtt', tracking_error_rad: 0.12, settle: {}, sim: true, sim_args: [] },
  ]);
  assert.deepEqual(
    [c.robots.stale_ms, c.robots.heartbeat, c.robots.simulate],
    [200, { period_ms: 100, timeout_ms: 500 }, true],
  );
  assert.equal(c.data_dir, join(homedir(), '.brainstem'));
  assert.ok(Object.isFrozen(c.server), 'config is frozen');
});

test('a user file overrides only the keys it names; null means default', () => {
  withFile('server:\n  port: 9000\n  host:\nmqtt:\n  embedded: { port: 11883 }\n', (file) => {
    const c = loadConfig({ file, env: {} });
    assert.equal(c.server.port, 9000);
    assert.equal(c.server.host, '127.0.0.1');
    assert.deepEqual(c.mqtt.embedded, { ...loadConfig({ env: {} }).mqtt.embedded, port: 11883 });
  });
});

test('an empty user file is the defaults', () => {
  withFile('', (file) => assert.equal(loadConfig({ file, env: {} }).server.port, 7777));
});

test('BRAINSTEM_* environment overrides typed keys and wins over the file', () => {
  withFile('server: { port: 9000 }\n', (file) => {
    const c = loadConfig({
      file,
      cwd: '/srv',
      env: {
        BRAINSTEM_SERVER_PORT: '8080',
        BRAINSTEM_SERVER_TOKEN: 'abc',
        BRAINSTEM_MQTT_URL: 'mqtt://u:p-0123456789abcdef@broker:1883',
        BRAINSTEM_MQTT_EMBEDDED_PORT: '0',
        BRAINSTEM_MQTT_USERNAME: 'robot',
        BRAINSTEM_MQTT_PASSWORD: 'pw-0123456789abcdef',
        BRAINSTEM_MQTT_BASE: 'lab/cell1',
        BRAINSTEM_MQTT_RECONNECT_MAX_MS: '1000',
        BRAINSTEM_LOGGING_LEVEL: 'debug',
        BRAINSTEM_DATA_DIR: 'state',
        BRAINSTEM_TEST_MOSQUITTO_URL: 'ignored: not a config key',
        BRAINSTEM_ENGINE_THREADS: '3',
        BRAINSTEM_ENGINE_KEEP_ALIVE: '90s',
      },
    });
    assert.equal(c.server.port, 8080);
    assert.equal(c.server.token, 'abc');
    assert.equal(c.mqtt.url, 'mqtt://u:p-0123456789abcdef@broker:1883');
    assert.equal(c.mqtt.embedded.port, 0);
    assert.equal(c.mqtt.username, 'robot');
    assert.equal(c.mqtt.password, 'pw-0123456789abcdef');
    assert.equal(c.mqtt.base, 'lab/cell1');
    assert.equal(c.mqtt.reconnect.max_ms, 1000);
    assert.equal(c.logging.level, 'debug');
    assert.equal(c.data_dir, '/srv/state');
    assert.equal(c.engine.threads, 3);
    assert.equal(c.engine.keep_alive, '90s');
    assert.deepEqual(c.models, {});
  });
});

test('programmatic overrides win over the environment, later layers over earlier', () => {
  const c = loadConfig({
    env: { BRAINSTEM_SERVER_PORT: '8080' },
    overrides: [{ server: { port: 1 } }, { server: { port: 2 } }],
  });
  assert.equal(c.server.port, 2);
});

test('a bad environment value names the variable, the key, the rule and the value', () => {
  const msg = configError(() => loadConfig({ env: { BRAINSTEM_SERVER_PORT: 'eighty' } }));
  assert.match(msg, /server\.port: must be an integer in 0\.\.65535, got "eighty" \(from BRAINSTEM_SERVER_PORT\)/);
});

test('a misspelt BRAINSTEM_ variable in a known section is reported with the known names', () => {
  const msg = configError(() => loadConfig({ env: { BRAINSTEM_SERVER_PROT: '1' } }));
  assert.match(msg, /BRAINSTEM_SERVER_PROT: is not a known configuration variable \(known: .*BRAINSTEM_SERVER_PORT/);
});

test('boolean-looking and numeric text reaches string keys unchanged', () => {
  const c = loadConfig({ env: { BRAINSTEM_SERVER_TOKEN: '1234', BRAINSTEM_MQTT_PASSWORD: 'true' } });
  assert.equal(c.server.token, '1234');
  assert.equal(c.mqtt.password, 'true');
});

// Each rule of the schema, with the message it must produce.
const RULES: [string, Record<string, unknown>, RegExp][] = [
  ['port below range', { server: { port: -1 } }, /server\.port: must be an integer in 0\.\.65535, got -1/],
  ['port above range', { server: { port: 65536 } }, /server\.port: must be an integer in 0\.\.65535, got 65536/],
  ['port fractional', { server: { port: 80.5 } }, /server\.port: must be an integer in 0\.\.65535, got 80\.5/],
  ['port as text', { server: { port: '80' } }, /server\.port: must be an integer in 0\.\.65535, got "80"/],
  ['empty host', { server: { host: '' } }, /server\.host: must be a non-empty string, got ""/],
  ['token not a string', { server: { token: 42 } }, /server\.token: must be a string, got <hidden, 2 characters>/],
  [
    'message limit too small',
    { server: { max_message_bytes: 10 } },
    /server\.max_message_bytes: must be an integer in 1024\.\.1073741824, got 10/,
  ],
  [
    'broker url unparsable',
    { mqtt: { url: 'not a url' } },
    /mqtt\.url: must be empty or a URL like mqtt:\/\/host:1883, got "not a url"/,
  ],
  [
    'broker url scheme',
    { mqtt: { url: 'http://x:1883' } },
    /mqtt\.url: must use one of the schemes mqtt, mqtts, tcp, tls, ws, wss, got "http:\/\/x:1883"/,
  ],
  [
    'embedded port',
    { mqtt: { embedded: { port: 70000 } } },
    /mqtt\.embedded\.port: must be an integer in 0\.\.65535, got 70000/,
  ],
  ['embedded host empty', { mqtt: { embedded: { host: '' } } }, /mqtt\.embedded\.host: must be a non-empty string/],
  [
    'base wildcard #',
    { mqtt: { base: 'a/#' } },
    /mqtt\.base: must not contain MQTT wildcards \(\+, #\) or NUL, got "a\/#"/,
  ],
  ['base wildcard +', { mqtt: { base: 'a/+/b' } }, /mqtt\.base: must not contain MQTT wildcards/],
  ['base leading slash', { mqtt: { base: '/a' } }, /mqtt\.base: must not have empty levels/],
  ['base trailing slash', { mqtt: { base: 'a/' } }, /mqtt\.base: must not have empty levels/],
  ['base $', { mqtt: { base: '$SYS' } }, /mqtt\.base: must not start with "\$"/],
  ['base empty', { mqtt: { base: '' } }, /mqtt\.base: must be a non-empty string/],
  ['protocol', { mqtt: { protocol: '4' } }, /mqtt\.protocol: must be one of "auto", "5", "3\.1\.1", got "4"/],
  [
    'protocol 5 with embedded broker',
    { mqtt: { protocol: '5' } },
    /mqtt\.protocol: must be "auto" or "3\.1\.1" with the embedded broker/,
  ],
  [
    'username empty with embedded broker',
    { mqtt: { username: '' } },
    /mqtt\.username: must be non-empty when the embedded broker runs/,
  ],
  [
    'username with a dot with embedded broker (client ids are bound by prefix)',
    { mqtt: { username: 'robot.yam' } },
    /mqtt\.username: must be letters, digits, _ and - \(no dots.*got "robot\.yam"/,
  ],
  ['username a role prefix', { mqtt: { username: 'observer' } }, /mqtt\.username: must not be "robot" or "observer"/],
  ['observer name not an id', { mqtt: { observers: ['a.b'] } }, /mqtt\.observers\[0\]: must match/],
  [
    'reconnect min > max',
    { mqtt: { reconnect: { min_ms: 5000, max_ms: 1000 } } },
    /mqtt\.reconnect\.min_ms: must be <= mqtt\.reconnect\.max_ms \(1000\), got 5000/,
  ],
  [
    'reconnect below 10 ms',
    { mqtt: { reconnect: { min_ms: 1 } } },
    /mqtt\.reconnect\.min_ms: must be an integer in 10\.\.600000, got 1/,
  ],
  ['log level', { logging: { level: 'verbose' } }, /logging\.level: must be one of "fatal", .*"silent", got "verbose"/],
  ['log format', { logging: { format: 'xml' } }, /logging\.format: must be one of "auto", "json", "pretty", got "xml"/],
  ['namespace level', { logging: { levels: { mqtt: 'loud' } } }, /logging\.levels\.mqtt: must be one of "fatal"/],
  [
    'unknown key with suggestion',
    { server: { prot: 1 } },
    /server\.prot: is not a known key \(did you mean "port"\?\), got 1/,
  ],
  [
    'unknown top-level key',
    { databse: {} },
    /databse: is not a known key \(known: data_dir, server, mqtt, logging, engine, models, files, robots, policy\)/,
  ],
  ['section not a mapping', { server: 5 }, /server: must be a mapping, not a number, got 5/],
  ['section is a list', { mqtt: [1] }, /mqtt: must be a mapping, not a list/],
  ['data_dir empty', { data_dir: '' }, /data_dir: must be a non-empty string/],
  ['engine not a mapping', { engine: ['x'] }, /engine: must be a mapping, not a list/],
  [
    'model entry not a mapping',
    { models: { qwen: 'path' } },
    /models\.qwen: must be a mapping, not a string, got "path"/,
  ],
  [
    'model name',
    { models: { 'bad name': { path: '/m' } } },
    /models\.bad name: must be a model name of letters, digits, "_", "\." or "-" \(":" separates an adapter in requests\), got "bad name"/,
  ],
  [
    'model without a path',
    { models: { qwen: {} } },
    /models\.qwen\.path: is required \(non-empty string\), got nothing/,
  ],
  [
    'model key misspelt',
    { models: { qwen: { path: '/m', thread: 2 } } },
    /models\.qwen\.thread: is not a known key \(did you mean "threads"\?\), got 2/,
  ],
  [
    'model threads',
    { models: { qwen: { path: '/m', threads: 1000 } } },
    /models\.qwen\.threads: must be an integer in 0\.\.256, got 1000/,
  ],
  [
    'model routing width',
    { models: { qwen: { path: '/m', top_k: 0 } } },
    /models\.qwen\.top_k: must be an integer in 1\.\.1024, got 0/,
  ],
  [
    'model activation bits',
    { models: { qwen: { path: '/m', activation_bits: 14 } } },
    /models\.qwen\.activation_bits: must be one of 8, 16, 24, got 14/,
  ],
  [
    'model prefill chunk',
    { models: { qwen: { path: '/m', prefill_chunk: 8192 } } },
    /models\.qwen\.prefill_chunk: must be an integer in 1\.\.4096, got 8192/,
  ],
  [
    'model keep_alive',
    { models: { qwen: { path: '/m', keep_alive: '5 minutes' } } },
    /models\.qwen\.keep_alive: must be a duration: seconds as a number, or a string like "30s", "5m", "1h30m" \(0 = now, negative = never\), got "5 minutes"/,
  ],
  ['engine keep_alive', { engine: { keep_alive: true } }, /engine\.keep_alive: must be a duration/],
  ['engine queue_size', { engine: { queue_size: -1 } }, /engine\.queue_size: must be an integer in 0\.\.10000, got -1/],
  ['engine sessions', { engine: { sessions: 0 } }, /engine\.sessions: must be an integer in 1\.\.64, got 0/],
  ['engine unknown key', { engine: { executor: 'hot' } }, /engine\.executor: is not a known key/],
  ['robot entry not a mapping', { robots: { serve: [3] } }, /robots\.serve\[0\]: must be a mapping, not a number/],
  [
    'robot id not a topic level',
    { robots: { serve: [{ id: 'a/b', robot: 'yam' }] } },
    /robots\.serve\[0\]\.id: must match .* \(it is an MQTT topic level\), got "a\/b"/,
  ],
  [
    'robot config unknown',
    { robots: { serve: [{ id: 'x', robot: 'nope' }] } },
    /robots\.serve\[0\]\.robot: must name a valid robot or setup config in .* \(robot "nope": config file: cannot be read, got ".*nope\.yaml"\), got "nope"/,
  ],
  [
    'robot ids repeated',
    {
      robots: {
        serve: [
          { id: 'x', robot: 'yam' },
          { id: 'x', robot: 'ur5e' },
        ],
      },
    },
    /robots\.serve\[1\]\.id: must be unique among robots\.serve, got "x"/,
  ],
  [
    'robot transport',
    { robots: { serve: [{ id: 'x', robot: 'yam', transport: 'can' }] } },
    /robots\.serve\[0\]\.transport: must be one of "mqtt", "ws", got "can"/,
  ],
  [
    'heartbeat timeout not above the period',
    { robots: { heartbeat: { period_ms: 500, timeout_ms: 400 } } },
    /robots\.heartbeat\.timeout_ms: must be greater than robots\.heartbeat\.period_ms \(500\), got 400/,
  ],
  [
    'settle override typo',
    { robots: { serve: [{ id: 'x', robot: 'yam', settle: { position_tol: 0.01 } }] } },
    /robots\.serve\[0\]\.settle\.position_tol: is not a known key \(did you mean "position_tol_rad"\?\)/,
  ],
];

for (const [name, layer, expected] of RULES) {
  test(`rule: ${name}`, () => {
    const msg = configError(() => loadConfig({ env: {}, overrides: layer }));
    assert.match(msg, expected, `layer ${JSON.stringify(layer)} gave:\n${msg}`);
    assert.match(msg, /\(from overrides\)/);
  });
}

test('models: a path and optional profile keys; keep_alive stays as written (durations are checked)', () => {
  const c = loadConfig({
    env: {},
    overrides: {
      engine: { threads: 4, keep_alive: -1 },
      models: { 'qwen3-30b': { path: '/m', top_k: 6, keep_alive: '1h30m' }, b: { path: 'x', keep_alive: 0 } },
    },
  });
  assert.equal(c.engine.threads, 4);
  assert.equal(c.engine.keep_alive, -1, 'negative = never');
  assert.deepEqual(
    { ...c.models['qwen3-30b'] },
    {
      path: '/m',
      threads: undefined,
      context_length: undefined,
      top_k: 6,
      backend: undefined,
      activation_bits: undefined,
      prefill_chunk: undefined,
      prefault: undefined,
      keep_alive: '1h30m',
      queue_size: undefined,
      queue_per_client: undefined,
      sessions: undefined,
      prefill_path: undefined,
      decode_path: undefined,
      slots: undefined,
      cache_bytes: undefined,
      io_threads: undefined,
      io_mode: undefined,
      device_expert_bytes: undefined,
      prerouter: undefined,
      adapters: undefined,
    },
  );
  assert.equal(c.models.b!.keep_alive, 0);
});

test('models.<name>.adapters: LoRA adapters by name with a path and an optional format', () => {
  const c = loadConfig({
    env: {},
    overrides: {
      models: {
        q: { path: '/m', adapters: { tuned: { path: '/a' }, edge: { path: '/e.safetensors', format: 'edge0' } } },
      },
    },
  });
  assert.deepEqual(c.models.q!.adapters, {
    tuned: { path: '/a', format: undefined },
    edge: { path: '/e.safetensors', format: 'edge0' },
  });
  const msg = configError(() =>
    loadConfig({
      env: {},
      overrides: {
        models: { q: { path: '/m', adapters: { 'a:b': { path: '/a' }, ok: { path: '/a', format: 'lycoris' } } } },
      },
    }),
  );
  assert.match(msg, /models\.q\.adapters\.a:b: must be an adapter name of 1-64 letters, digits, "_", "\." or "-"/);
  assert.match(msg, /models\.q\.adapters\.ok\.format: must be one of "peft", "mlx", "edge0", got "lycoris"/);
});

test('protocol 5 and an empty username are fine with an external broker', () => {
  const c = loadConfig({
    env: {},
    overrides: { mqtt: { url: 'mqtts://broker.example:8883', protocol: '5', username: '' } },
  });
  assert.equal(c.mqtt.protocol, '5');
});

test('every problem is listed at once, each with where it came from', () => {
  withFile('server:\n  port: 99999\nmqtt:\n  base: "a/#"\n', (file) => {
    const msg = configError(() => loadConfig({ file, env: { BRAINSTEM_LOGGING_LEVEL: 'chatty' } }));
    assert.match(msg, /^invalid configuration \(3 problems\):/);
    assert.match(
      msg,
      new RegExp(`server\\.port: .*got 99999 \\(from ${file.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}\\)`),
    );
    assert.match(msg, /mqtt\.base: .*\(from .*user\.yaml\)/);
    assert.match(msg, /logging\.level: .*got "chatty" \(from BRAINSTEM_LOGGING_LEVEL\)/);
    assert.doesNotMatch(msg, /\n\s+at /, 'no stack trace');
  });
});

test('YAML syntax errors name the file and the line', () => {
  withFile('server:\n  port: 1\n   host: x\n', (file) => {
    const msg = configError(() => loadConfig({ file, env: {} }));
    assert.match(msg, /user\.yaml is not valid YAML: .* at line \d+, column \d+$/);
  });
});

test('duplicate keys are a YAML error', () => {
  withFile('server:\n  port: 1\n  port: 2\n', (file) =>
    assert.match(
      configError(() => loadConfig({ file, env: {} })),
      /not valid YAML: .*[Uu]nique/,
    ),
  );
});

test('a missing file and a non-mapping document are reported', () => {
  assert.match(
    configError(() => loadConfig({ file: '/nonexistent/brainstem.yaml', env: {} })),
    /cannot read config file \/nonexistent\/brainstem\.yaml: file not found/,
  );
  withFile('- a\n- b\n', (file) =>
    assert.match(
      configError(() => loadConfig({ file, env: {} })),
      /must contain a mapping of keys at the top level, not a list/,
    ),
  );
  withFile('just text\n', (file) =>
    assert.match(
      configError(() => loadConfig({ file, env: {} })),
      /must contain a mapping of keys at the top level, not string/,
    ),
  );
});

test('prototype keys in a config file are refused, not merged into Object.prototype', () => {
  withFile('server:\n  __proto__:\n    polluted: 1\n  constructor: 2\n', (file) => {
    const msg = configError(() => loadConfig({ file, env: {} }));
    assert.match(msg, /server\.__proto__: is a reserved key .* \(from .*user\.yaml\)/);
    assert.match(msg, /server\.constructor: is a reserved key/);
  });
  assert.equal(({} as Record<string, unknown>).polluted, undefined);
});

test('a model named __proto__ is refused with a config error instead of vanishing', () => {
  withFile('models:\n  __proto__:\n    path: /tmp/m\n  prototype:\n    path: /tmp/n\n', (file) => {
    const msg = configError(() => loadConfig({ file, env: {} }));
    assert.match(msg, /models\.__proto__: is a reserved key/);
    assert.match(msg, /models\.prototype: is a reserved key/);
  });
  assert.equal(({} as Record<string, unknown>).path, undefined);
});

test('prototype keys in overrides and unknown BRAINSTEM_ variables are refused', () => {
  const msg = configError(() =>
    loadConfig({
      env: { BRAINSTEM_SERVER_CONSTRUCTOR: '1' },
      overrides: JSON.parse('{"logging":{"levels":{"__proto__":"debug"}}}'),
    }),
  );
  assert.match(msg, /logging\.levels\.__proto__: is a reserved key/);
  assert.match(msg, /BRAINSTEM_SERVER_CONSTRUCTOR: is not a known configuration variable/);
});

test('server limits: defaults, and ws_pause_bytes ≤ ws_max_buffered_bytes ≤ ws_total_buffered_bytes', () => {
  const c = loadConfig({ env: {} });
  assert.equal(c.server.max_batch_calls, 1000);
  assert.equal(c.server.max_json_depth, 64);
  assert.equal(c.server.ws_pause_bytes, 1 << 20);
  assert.equal(c.server.ws_max_buffered_bytes, 16 << 20);
  const msg = configError(() => loadConfig({ env: { BRAINSTEM_SERVER_WS_PAUSE_BYTES: String(32 << 20) } }));
  assert.match(msg, /server\.ws_pause_bytes: must be <= server\.ws_max_buffered_bytes \(16777216\), got 33554432/);
  assert.equal(c.server.ws_total_buffered_bytes, 128 << 20);
  const total = configError(() => loadConfig({ env: { BRAINSTEM_SERVER_WS_TOTAL_BUFFERED_BYTES: String(8 << 20) } }));
  assert.match(
    total,
    /server\.ws_max_buffered_bytes: must be <= server\.ws_total_buffered_bytes \(8388608\), got 16777216/,
  );
});

test('server subscription caps and allowed_hosts: defaults, and bad values named with rule and value', () => {
  const c = loadConfig({ env: {} });
  assert.deepEqual([c.server.max_subscriptions, c.server.max_subscriptions_total], [16, 256]);
  assert.deepEqual(c.server.allowed_hosts, []);
  const caps = configError(() => loadConfig({ env: { BRAINSTEM_SERVER_MAX_SUBSCRIPTIONS_TOTAL: '8' } }));
  assert.match(caps, /server\.max_subscriptions: must be <= server\.max_subscriptions_total \(8\), got 16/);
  const host = configError(() =>
    loadConfig({ env: {}, overrides: [{ server: { allowed_hosts: ['ok.lan', 'pc.lan:80'] } }] }),
  );
  assert.match(
    host,
    /server\.allowed_hosts\[1\]: must be a host name like robot-pc\.lan \(letters, digits, - and \.; no port\), got "pc\.lan:80"/,
  );
});
