// Which arms hold an object, by the daemon's own record of the gripper commands it sent: a
// controller's `finished` counts only for a command id the daemon sent, for the arm it was sent
// to, and only when that command is the arm's newest (a late one must not undo a newer grasp).
import type { EventMsg } from '../link/protocol.js';

/** Gripper command ids remembered past their call (an event may come after the call ended). */
const MAX_IDS = 256;

export class GraspRecord {
  /** Gripper command id → arm, the newest MAX_IDS. */
  private readonly arms = new Map<string, string>();
  /** Arm → the id of the newest gripper command sent to it. */
  private readonly newest = new Map<string, string>();
  private readonly holding = new Set<string>();

  constructor(private readonly armNames: readonly string[]) {}

  /** A gripper command was published to `arm`. */
  sent(id: string, arm: string): void {
    if (!this.armNames.includes(arm)) return;
    this.arms.set(id, arm);
    this.newest.set(arm, id);
    if (this.arms.size > MAX_IDS) this.arms.delete(this.arms.keys().next().value!);
  }

  /**
   * A gripper event: a `finished` of an arm's newest command sets whether it holds an object.
   * Returns why the event names no command of this daemon, or null.
   */
  event(e: EventMsg): string | null {
    if (e.id === null || e.command !== 'gripper') return null;
    const arm = this.arms.get(e.id);
    if (arm === undefined)
      return `event.id: must name a gripper command this daemon sent (the newest ${MAX_IDS}), got ${JSON.stringify(e.id)}`;
    if (e.event !== 'finished' || this.newest.get(arm) !== e.id) return null;
    if (e.reason === 'grasped') this.holding.add(arm);
    else this.holding.delete(arm);
    return null;
  }

  /** The arms whose gripper closed on an object, in the model's order. */
  grasped(): string[] {
    return this.armNames.filter((a) => this.holding.has(a));
  }

  /** A restarted controller knows none of the old commands, and what it holds is unknown. */
  reset(): void {
    this.arms.clear();
    this.newest.clear();
    this.holding.clear();
  }
}
