/** Slots for concurrent work: at most `global` at once, and at most `perKey` for any one key. */
export class Gate {
  private readonly perKeyActive = new Map<string, number>();
  private readonly waiters: Array<{ key: string; go: () => void }> = [];
  /** Slots in use now. */
  active = 0;

  constructor(
    private readonly global: number,
    private readonly perKey: number,
  ) {}

  /** True while a global slot is free. */
  hasRoom(): boolean {
    return this.active < this.global;
  }

  /** Take a slot for `key` if one is free now. */
  tryAcquire(key: string): boolean {
    if (this.active >= this.global || (this.perKeyActive.get(key) ?? 0) >= this.perKey) return false;
    this.active++;
    this.perKeyActive.set(key, (this.perKeyActive.get(key) ?? 0) + 1);
    return true;
  }

  /** Take a slot for `key`, waiting for one; each holder's work ends by its deadline, so the wait is bounded. */
  acquire(key: string): Promise<void> {
    if (this.tryAcquire(key)) return Promise.resolve();
    return new Promise((go) => this.waiters.push({ key, go }));
  }

  /** Give a slot back and hand free slots to waiters whose key has room. */
  release(key: string): void {
    this.active--;
    const left = (this.perKeyActive.get(key) ?? 1) - 1;
    if (left <= 0) this.perKeyActive.delete(key);
    else this.perKeyActive.set(key, left);
    for (let i = 0; i < this.waiters.length && this.hasRoom(); ) {
      const w = this.waiters[i];
      if (this.tryAcquire(w.key)) {
        this.waiters.splice(i, 1);
        w.go();
      } else i++;
    }
  }
}
