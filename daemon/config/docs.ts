// docs/config.md, generated from the config schema's own type texts, defaults and docs
// (`npm run docs:config`); a test fails when the checked-in page differs from this output.
import { pathToFileURL } from 'node:url';
import { leaves, type Node } from '../../robot/common/validation/builders.js';
import { envName } from './env.js';
import { defaultConfigFile, readYamlFile } from './load.js';
import { daemonSchema } from './schema.js';

const HEADER = `# Configuration

<!-- Generated from daemon/config/schema.ts by \`npm run docs:config\`; edit the schema's docs, not this page. -->

The daemon reads one YAML configuration, merged from (later wins):

1. \`configs/brainstem.yaml\`: the documented defaults (every key, with comments);
2. the user file given with \`--config FILE\` (any subset of keys; \`key:\` with no value = default);
3. environment variables: \`BRAINSTEM_\` + the upper-cased dotted path with dots as underscores
   (\`server.port\` → \`BRAINSTEM_SERVER_PORT\`); numbers and booleans are parsed for typed keys.
   A misspelt variable in a known section (\`BRAINSTEM_SERVER_PROT\`) is an error, not ignored.
   Keys inside lists and free mappings (\`robots.serve\`, \`models\`, \`logging.levels\`) have no variables;
   a \`BRAINSTEM_MODELS_…\` variable is an error saying so (set models in a config file).

Unknown keys are errors (with a "did you mean" suggestion). Check a file with
\`brainstem config check FILE\`.

**Secrets and local access.** With \`server.token\` empty (the default) the daemon generates a
token at first start, stores it in \`<data_dir>/token\` (mode 0600) and logs the file's path; local
tools read it from there (\`curl -H "Authorization: Bearer $(cat ~/.brainstem/token)" ...\`).
With the embedded broker and \`mqtt.password\` empty, the broker password is generated the same way
into \`<data_dir>/mqtt-password\` (user \`mqtt.username\`). Printed configs mask both; config errors
show a secret key's value as its length only (\`<hidden, 9 characters>\`) and URLs with the password masked.

**Secret length.** A generated secret has 32 characters. A configured (or stored) secret shorter
than 16 characters (\`server.token\`, \`mqtt.password\`, the password in \`mqtt.url\`, any other
secret key, a controller's or observer's secret in \`<data_dir>/mqtt-identities/\`, named
\`data_dir/mqtt-identities/<user>\`) is a config error (exit 2, naming the key and the rule, never the secret) when it can
be tried from another machine: \`server.host\` for the token, \`mqtt.embedded.host\` (and
\`mqtt.embedded.tls.host\` when a TLS listener is configured; embedded broker) or the host of
\`mqtt.url\` (external broker) for the broker's secrets, off loopback (anything but
\`127.0.0.0/8\`, \`::1\`, \`localhost\` and \`*.localhost\`; \`0.0.0.0\` and \`::\` included). On
loopback it is accepted with a warning (logged at start, printed by \`brainstem config check\`,
which also judges the secrets already stored in data_dir).
`;

// Narrative and examples for the sections whose entries are written by hand.
const NOTES: Record<string, string> = {
  'robots.serve': `Each entry serves one robot or setup config (\`configs/robots/<robot>.yaml\`: \`ur5e\`, \`panda\`,
\`yam\`, \`dual-yam\`, …) to one controller. The daemon refuses to drive a controller whose
description (arms, joint names in order) differs from the robot config, and says why in
\`robots.list\` and in every refused call.

\`\`\`yaml
robots:
  simulate: false            # real controllers only
  serve:
    - { id: left-ur, robot: ur5e }
    - { id: bench, robot: dual-yam, transport: ws, tracking_error_rad: 0.08, settle: { timeout_s: 5 } }
\`\`\``,
  models: `Each model is a name (letters, digits, \`_\`, \`.\`, \`-\`; requests write \`name\` or \`name:adapter\`)
mapped to its folder and an optional profile; profile keys left out take the \`engine.*\` value.

\`\`\`yaml
models:
  qwen3-30b:
    path: ~/models/Qwen3-30B-A3B-4bit   # config.json, *.safetensors, tokenizer.json, tokenizer_config.json
    threads: 8
    context_length: 16384
    top_k: 6              # routing width K (experts per token); default: num_experts_per_tok
    keep_alive: 30m
    adapters:             # LoRA adapters loaded with the model; requests use "qwen3-30b:tuned"
      tuned: { path: ~/adapters/qwen3-tuned }            # PEFT, mlx-lm or Edge0 (detected)
      edge: { path: ~/adapters/lora_edge0.safetensors, format: edge0 }
\`\`\``,
};

const FOOTER = `## Adding a config section

\`daemon/config/sections.ts\` assigns the owned sections their schemas (\`engine\` and \`models\` from
\`daemon/engine/config.ts\`, \`robots\` from \`daemon/robots/config.ts\`). Build a new one with the
validators in \`robot/common/validation/builders.ts\` (\`obj\`, \`int\`, \`str\`, \`oneOf\`, \`record\`,
\`list\`, …; \`obj(..., { refine })\` for cross-field rules), give every key a \`doc\`, and assign it
there: its scalar keys then get \`BRAINSTEM_*\` variables, the same error messages, typed access
through \`Config\`, and a row on this page (\`npm run docs:config\`). Document every key in
\`configs/brainstem.yaml\` as well (a test checks).
`;

interface Row {
  key: string;
  node: Node<unknown>;
}

/** Every documented key under `node`: closed mappings are walked, records and lists get a row and their entries' keys. */
function rows(node: Node<unknown>, path: string): Row[] {
  const { fields, item } = node.info;
  if (fields) {
    const own = node.info.doc ? [{ key: path, node }] : [];
    return [...own, ...Object.entries(fields).flatMap(([k, child]) => rows(child, `${path}.${k}`))];
  }
  const entries = item?.info.fields
    ? rows(item, node.info.kind === 'list' ? `${path}[]` : `${path}.<name>`).filter((r) => r.node !== item)
    : [];
  return [{ key: path, node }, ...entries];
}

// Lists and free mappings default to what configs/brainstem.yaml sets (robots.serve: one simulated yam).
function defaultText(
  key: string,
  node: Node<unknown>,
  engine: Record<string, Node<unknown>>,
  file: Record<string, unknown>,
): string {
  const inFile = key.split('.').reduce<unknown>((o, k) => (o as Record<string, unknown> | undefined)?.[k], file);
  const d = node.info.item && inFile !== undefined ? inFile : node.info.default;
  if (d === undefined) {
    const inherited = key.match(/^models\.<name>\.(\w+)$/)?.[1];
    if (inherited && inherited in engine) return `\`engine.${inherited}\``;
    return node.info.optional ? '—' : node.info.fields ? '`{}`' : 'required';
  }
  return typeof d === 'string' && d !== '' ? `\`${d}\`` : `\`${JSON.stringify(d)}\``;
}

const cell = (s: string): string => s.replace(/\|/g, '\\|').replace(/\n/g, ' ');

export function configDocs(): string {
  const withEnv = new Set(leaves(daemonSchema).map((l) => l.path));
  const engine = daemonSchema.info.fields!.engine!.info.fields!;
  const file = readYamlFile(defaultConfigFile);
  const out = [HEADER];
  for (const [section, node] of Object.entries(daemonSchema.info.fields!)) {
    out.push(`## \`${section}\``, '');
    if (node.info.kind === 'mapping' && node.info.doc) out.push(`${node.info.doc}.`, '');
    if (NOTES[section]) out.push(NOTES[section], '');
    out.push('| Key | Type | Default | Environment | Meaning |', '|---|---|---|---|---|');
    const keys = node.info.fields
      ? Object.entries(node.info.fields).flatMap(([k, child]) => rows(child, `${section}.${k}`))
      : rows(node, section);
    for (const { key, node: n } of keys) {
      const env = withEnv.has(key) ? `\`${envName(key)}\`` : '—';
      out.push(
        `| \`${key}\` | ${cell(n.info.type)} | ${cell(defaultText(key, n, engine, file))} | ${env} | ${cell(n.info.doc ?? '')} |`,
      );
    }
    out.push('');
    for (const [path, note] of Object.entries(NOTES)) {
      if (path.startsWith(`${section}.`)) out.push(`### \`${path}\``, '', note, '');
    }
  }
  out.push(FOOTER);
  return out.join('\n');
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) process.stdout.write(configDocs());
