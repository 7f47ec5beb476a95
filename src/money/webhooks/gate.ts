/**
 * Slots for concurrent work: at most `global` at once, at most `perGroup` for any one group (a shop) and at
 * most `perKey` for any one key (a receiver), so that one shop's slow or hanging receivers can hold only
 * their own slots and their shop's share, never every slot of the server.
 */
export class Gate {
  private readonly perKeyActive = new Map<string, number>();
  private readonly perGroupActive = new Map<string, number>();
  private readonly waiters: Array<{ key: string; group: string; go: () => void }> = [];
  /** Slots in use now. */
  active = 0;

  constructor(
    private readonly global: number,
    private readonly perKey: number,
    private readonly perGroup: number = global,
  ) {}

  /** True while a global slot is free. */
  hasRoom(): boolean {
    return this.active < this.global;
  }

  /** Take a slot for `key` of `group` if one is free now. */
  tryAcquire(key: string, group = ''): boolean {
    if (this.active >= this.global || (this.perKeyActive.get(key) ?? 0) >= this.perKey || (this.perGroupActive.get(group) ?? 0) >= this.perGroup) return false;
    this.active++;
    this.perKeyActive.set(key, (this.perKeyActive.get(key) ?? 0) + 1);
    this.perGroupActive.set(group, (this.perGroupActive.get(group) ?? 0) + 1);
    return true;
  }

  /** Take a slot for `key` of `group`, waiting for one; each holder's work ends by its deadline, so the wait is bounded. */
  acquire(key: string, group = ''): Promise<void> {
    if (this.tryAcquire(key, group)) return Promise.resolve();
    return new Promise((go) => this.waiters.push({ key, group, go }));
  }

  /** Give a slot back and hand free slots to waiters whose key and group have room, oldest first. */
  release(key: string, group = ''): void {
    this.active--;
    dec(this.perKeyActive, key);
    dec(this.perGroupActive, group);
    for (let i = 0; i < this.waiters.length && this.hasRoom(); ) {
      const w = this.waiters[i];
      if (this.tryAcquire(w.key, w.group)) {
        this.waiters.splice(i, 1);
        w.go();
      } else i++;
    }
  }
}

function dec(m: Map<string, number>, k: string): void {
  const left = (m.get(k) ?? 1) - 1;
  if (left <= 0) m.delete(k);
  else m.set(k, left);
}
