// Who may publish and subscribe what on the broker: one identity per role. The daemon alone
// publishes commands and its heartbeat/availability; a controller publishes only its own robot's
// identity, state, events, camera frames (and a simulator's `sim/scene`) and reads only its own commands;
// observers read. `$` topics ($SYS)
// are granted to nobody. The embedded broker enforces these grants; `mosquittoAcl` writes them
// for an external Mosquitto.
import { cameraGrants } from '../../robot/link/camera-protocol.js';
import { CONTROLLER_TOPICS, DAEMON_TOPICS, daemonTopics, robotFilter, robotTopic } from '../../robot/link/protocol.js';
import { simSceneTopic } from '../../robot/link/sim-scene.js';

export type Role = { kind: 'daemon' } | { kind: 'controller'; robot: string } | { kind: 'observer'; name: string };

export interface Identity {
  username: string;
  password: string;
  role: Role;
}

export interface Grants {
  /** Topic filters the identity may publish to. */
  publish: string[];
  /** Topic filters the identity may subscribe within. */
  subscribe: string[];
  /** The exact topics the identity may publish a retained message on (no filters). */
  retain: string[];
}

export const controllerUsername = (robot: string) => `robot.${robot}`;
export const observerUsername = (name: string) => `observer.${name}`;

/** Why `username` cannot be the daemon's identity on a broker with these ACLs, or undefined. */
export function daemonUsernameProblem(username: string): string | undefined {
  // Client ids are bound to identities by the prefix `<username>.`, so no identity may be
  // such a prefix of another: the daemon's name has no dot and is not a role prefix.
  if (username === '') return 'must be non-empty';
  if (!/^[A-Za-z0-9][A-Za-z0-9_-]*$/.test(username))
    return 'must be letters, digits, _ and - (no dots: client ids are bound to <username>.*)';
  if (username === 'robot' || username === 'observer') return 'must not be "robot" or "observer" (identity prefixes)';
  return undefined;
}

export function grantsFor(base: string, role: Role): Grants {
  const daemon = daemonTopics(base);
  switch (role.kind) {
    case 'daemon':
      return {
        publish: [...DAEMON_TOPICS.map((t) => robotFilter(base, t)), daemon.heartbeat, daemon.availability],
        subscribe: [`${base}/#`],
        retain: [daemon.availability],
      };
    case 'controller':
      return {
        publish: [
          ...CONTROLLER_TOPICS.map((t) => robotTopic(base, role.robot, t)),
          ...cameraGrants(base, role.robot),
          simSceneTopic(base, role.robot),
        ],
        subscribe: [
          ...DAEMON_TOPICS.map((t) => robotTopic(base, role.robot, t)),
          daemon.heartbeat,
          daemon.availability,
        ],
        retain: [robotTopic(base, role.robot, 'availability'), robotTopic(base, role.robot, 'description')],
      };
    case 'observer':
      return { publish: [], subscribe: [`${base}/#`], retain: [] };
  }
}

/** Whether every topic that `filter` matches is also matched by `grant` (both MQTT filters). */
export function covers(grant: string, filter: string): boolean {
  // A `$` topic only matches filters that name it (MQTT-4.7.2-1); no grant does.
  if (filter.startsWith('$') || grant.startsWith('$')) return false;
  const g = grant.split('/');
  const f = filter.split('/');
  for (let i = 0; i < g.length; i++) {
    if (g[i] === '#') return true;
    if (i >= f.length || f[i] === '#') return false;
    if (g[i] !== '+' && (f[i] === '+' || f[i] !== g[i])) return false;
  }
  return f.length === g.length;
}

export const allowed = (grants: string[], filter: string) => grants.some((g) => covers(g, filter));

/** The identity that owns `clientId` (it is `<username>` or `<username>.<anything>`), if any. */
export function clientIdOwner(clientId: string, usernames: Iterable<string>): string | undefined {
  for (const u of usernames) if (clientId === u || clientId.startsWith(`${u}.`)) return u;
  return undefined;
}

/** A Mosquitto acl_file granting the same (anything not granted is denied, `$SYS` included). */
export function mosquittoAcl(base: string, identities: Identity[]): string {
  const lines = [
    '# brainstem MQTT ACL (written by `brainstem mqtt credentials`): one user per identity;',
    '# anything not granted is denied, $SYS included.',
  ];
  for (const id of identities) {
    const g = grantsFor(base, id.role);
    lines.push('', `user ${id.username}`);
    for (const t of g.publish) lines.push(`topic write ${t}`);
    for (const t of g.subscribe) lines.push(`topic read ${t}`);
  }
  return lines.join('\n') + '\n';
}
