// The composition root: builds every service from one validated config, in start order.
// The API starts first so /health answers 503 while the rest start; stop runs in reverse.
// Later parts (engine, robots) add their services, RPC methods and routes here.
import { arch, platform } from 'node:os';
import { ApiServer, WS_PATH } from './api/server.js';
import { Metrics } from './api/metrics.js';
import { HttpRoutes } from './api/routes.js';
import { RpcRegistry } from './api/rpc/registry.js';
import { registerChatRoute } from './api/openai/chat-route.js';
import { registerModelRoutes } from './api/openai/models-route.js';
import { registerChatMethods } from './api/rpc/chat.js';
import { registerModelMethods } from './api/rpc/models.js';
import { registerAdapterMethods } from './api/rpc/adapters.js';
import { registerPolicyMethods } from './api/rpc/policy.js';
import { registerRobotMethods } from './api/rpc/robots.js';
import { registerCameraMethods } from './api/rpc/cameras.js';
import { registerCameraRoutes } from './api/camera-routes.js';
import { registerSystemMethods } from './api/rpc/system.js';
import { registerStatusRoutes } from './api/status-routes.js';
import { registerConsoleRoutes } from './console/routes.js';
import { AuthLimiter } from './api/auth-limiter.js';
import { registerRobotViewMethods } from './api/rpc/robot-views.js';
import { registerMetricsMethod } from './api/rpc/metrics-snapshot.js';
import { registerPolicyRecordMethods } from './api/rpc/policy-records.js';
import { ConsoleSessions } from './console/sessions.js';
import type { Config } from './config/schema.js';
import { ConfigError, formatConfigIssues } from './config/load.js';
import { checkSecretStrength } from './config/secret-strength.js';
import { redactUrl, resolveSecret, type Secret } from './config/secrets.js';
import { Daemon } from './daemon.js';
import { ChatService } from './engine/chat-service.js';
import { servedModels } from './engine/demo-model.js';
import { ModelRegistry } from './engine/model-registry.js';
import { loadNativeModel } from './engine/served-model.js';
import { ServingMetrics } from './engine/serving-metrics.js';
import { visionOptions } from './vision/config.js';
import { Logs } from './log.js';
import type { Identity } from './mqtt/acl.js';
import { EmbeddedBroker, maxPacketBytes } from './mqtt/broker.js';
import { identitySecrets, mqttIdentities } from './mqtt/identities.js';
import { PolicyService } from './policy/episode/service.js';
import { RobotLink } from './robots/link-service.js';
import { SimChildren } from './robots/sim-children.js';
import { CONTROLLER_PATH } from '../robot/link/ws-envelope.js';
import { DaemonMqttClient } from './mqtt/client.js';
import { acceleratorNote, tryLoadNative } from './native/binding.js';
import type { Service } from './service.js';
import { VERSION } from './version.js';

export interface DaemonParts {
  config: Config;
  logs: Logs;
  metrics: Metrics;
  rpc: RpcRegistry;
  routes: HttpRoutes;
  token: Secret;
  /** The daemon's MQTT identity first, then one per controller and observer. */
  mqttIdentities: Identity[];
  api: ApiServer;
  broker?: EmbeddedBroker;
  mqtt: DaemonMqttClient;
  models: ModelRegistry;
  chat: ChatService;
  robots: RobotLink;
  sims?: SimChildren;
  /** Policy episodes; the lead wires `policy.frames` (camera store) and `policy.scene` (simulator truth). */
  policy: PolicyService;
  daemon: Daemon;
}

/** Builds (does not start) a daemon. Creates data_dir secrets when the config leaves them empty. */
export function createDaemon(config: Config, opts: { logs?: Logs } = {}): DaemonParts {
  const logs = opts.logs ?? new Logs(config.logging);
  const metrics = new Metrics();
  const rpc = new RpcRegistry();
  const routes = new HttpRoutes();
  const token = resolveSecret(config.server.token, config.data_dir, 'token');
  const embedded = config.mqtt.url === '';
  const identities = mqttIdentities(config, embedded);
  const daemonIdentity = identities[0]!;
  // Stored secrets are checked like configured ones; generated ones have 32 characters.
  const strength = checkSecretStrength(config, {
    'server.token': token.value,
    ...(embedded ? { 'mqtt.password': daemonIdentity.password } : {}),
    ...identitySecrets(identities),
  });
  if (strength.issues.length) throw new ConfigError(formatConfigIssues(strength.issues));
  for (const w of strength.warnings) logs.get('daemon').warn(w);

  const sessions = config.server.console.enabled ? new ConsoleSessions(config.server.console.session_ttl_s) : undefined;
  // One budget of wrong tokens per address, whether guessed by Bearer, ?token= or console login.
  const limiter = new AuthLimiter();
  const api = new ApiServer({
    config: config.server,
    token: token.value,
    logs,
    routes,
    rpc,
    metrics,
    sessions,
    limiter,
  });
  if (sessions) registerConsoleRoutes(routes, token.value, sessions, logs.get('console'), { limiter });
  const broker = embedded
    ? new EmbeddedBroker({
        ...config.mqtt.embedded,
        base: config.mqtt.base,
        identities,
        maxPacketBytes: maxPacketBytes(config.robots.cameras.max_frame_bytes),
        // Bound late: the robot link is built below.
        onOversize: (robot, r) => robots.oversizeOverMqtt(robot, r.declared),
        log: logs.get('mqtt.broker'),
      })
    : undefined;
  const mqtt = new DaemonMqttClient({
    config: config.mqtt,
    brokerUrl: () => broker?.url() ?? config.mqtt.url,
    ...(broker ? { inProcess: () => broker.connectInProcess() } : {}),
    password: daemonIdentity.password,
    embedded,
    log: logs.get('mqtt.client'),
  });
  const serving = new ServingMetrics(metrics.registry);
  const served = servedModels(config);
  const modelsLog = logs.get('models');
  const models = new ModelRegistry({
    models: served.models,
    loader: loadNativeModel,
    acceleratorNote: () => {
      const { addon } = tryLoadNative();
      return addon && acceleratorNote(addon.info());
    },
    metrics: serving,
    log: modelsLog,
    prepare: (name) => {
      if (name === served.demo?.name && served.demo.prepare())
        modelsLog.info({ dir: served.demo.dir }, 'generated the demo model (random weights: its output is gibberish)');
    },
  });
  const chat = new ChatService(models, serving);
  registerChatRoute(routes, chat);
  registerModelRoutes(routes, models);
  registerChatMethods(rpc, chat);
  registerModelMethods(rpc, models);
  registerAdapterMethods(rpc, models);

  const robots = new RobotLink({
    config: config.robots,
    base: config.mqtt.base,
    mqtt,
    log: logs.get('robots'),
    metrics: metrics.registry,
  });
  api.addWebSocketPath(CONTROLLER_PATH, robots.acceptController, { maxPayload: robots.controllerMaxPayload });
  const policy = new PolicyService({
    config: config.policy,
    dataDir: config.data_dir,
    link: robots,
    chat,
    log: logs.get('policy'),
  });
  registerRobotMethods(rpc, robots, (id) => policy.robotStopped(id));
  registerPolicyMethods(rpc, policy, visionOptions(config.engine.vision).limits);
  registerCameraMethods(rpc, robots);
  registerRobotViewMethods(rpc, robots);
  registerMetricsMethod(rpc, metrics.registry);
  registerPolicyRecordMethods(rpc, config.data_dir);
  registerCameraRoutes(routes, robots);
  const simulated = config.robots.simulate ? config.robots.serve.filter((r) => r.sim) : [];
  const sims = simulated.length
    ? new SimChildren({
        robots: simulated,
        base: config.mqtt.base,
        configsDir: config.robots.configs_dir,
        // Each its own controller identity; the daemon's where none is stored (an external broker without ACLs).
        brokerUrl: (id) => {
          const own = identities.find((i) => i.role.kind === 'controller' && i.role.robot === id) ?? daemonIdentity;
          return withCredentials(broker?.url() ?? config.mqtt.url, own.username, own.password);
        },
        controllerUrl: () => api.url('ws') + CONTROLLER_PATH,
        token: token.value,
        tls: config.mqtt.tls,
        log: logs.get('robots.sim'),
      })
    : undefined;
  // The policy service stops first: its episodes end with the arms brought to rest while the link is up.
  const services: Service[] = [api, ...(broker ? [broker] : []), mqtt, models, robots, ...(sims ? [sims] : []), policy];
  const daemon = new Daemon(services, logs.get('daemon'));
  const health = () => daemon.health();

  registerStatusRoutes(routes, metrics, health, (name) => models.modelHealth(name));
  const startedAt = new Date().toISOString();
  registerSystemMethods({
    rpc,
    health,
    info: () => {
      const native = tryLoadNative();
      return {
        name: 'brainstem',
        version: VERSION,
        pid: process.pid,
        started_at: startedAt,
        node: process.version,
        platform: platform(),
        arch: arch(),
        api: { url: api.url(), ws: api.url('ws') + WS_PATH },
        mqtt: {
          url: redactUrl(broker?.url() ?? config.mqtt.url),
          embedded,
          base: config.mqtt.base,
          protocol: mqtt.protocol,
          connected: mqtt.connected,
        },
        native: native.addon ? native.addon.info() : { error: native.error },
      };
    },
  });
  return {
    config,
    logs,
    metrics,
    rpc,
    routes,
    token,
    mqttIdentities: identities,
    api,
    broker,
    mqtt,
    models,
    chat,
    robots,
    sims,
    policy,
    daemon,
  };
}

/** The broker URL with an identity's credentials (none for an anonymous broker). */
function withCredentials(url: string, username: string, password: string): string {
  const u = new URL(url);
  if (username) {
    u.username = username;
    u.password = password;
  }
  return u.toString();
}
