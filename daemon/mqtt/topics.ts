// Topic names under the configured base (mqtt.base).

export const AVAILABILITY_ONLINE = 'online';
export const AVAILABILITY_OFFLINE = 'offline';

/** Retained `online`/`offline` of the daemon itself (offline is also its last will). */
export function availabilityTopic(base: string): string {
  return `${base}/daemon/availability`;
}
