import type { Mode } from '../clock';
import type { Claim } from './jobs-table';
import type { FreshJob } from './shop-run';

/**
 * The advances of this process listening for the jobs scheduled on their shop and mode, so that an advance
 * learns of the jobs its own jobs schedule without reading the table again. A cache of this process's own
 * writes: the table holds every job anyway.
 */
export class ShopWatchers {
  private readonly byShop = new Map<string, Set<(job: FreshJob) => void>>();

  /** Call `sink` for every job scheduled on the shop and mode from now on; returns the function that stops it. */
  watch(shopId: string, mode: Mode, sink: (job: FreshJob) => void): () => void {
    const key = `${shopId}/${mode}`;
    const set = this.byShop.get(key) ?? new Set();
    set.add(sink);
    this.byShop.set(key, set);
    return () => {
      set.delete(sink);
      if (set.size === 0) this.byShop.delete(key);
    };
  }

  /** True when any advance listens (schedule() skips the call otherwise). */
  get any(): boolean {
    return this.byShop.size > 0;
  }

  /** A job was just written: tell the watchers of its shop and mode, with the row as written. */
  scheduled(j: { id: number; kind: string; subjectId: string; shopId: string | null; mode: Mode; dueAt: number; runAt: number; payload: string; createdAt: number; claim: Claim | null }): void {
    const watching = this.byShop.get(`${j.shopId}/${j.mode}`);
    if (!watching) return;
    const row = {
      id: j.id,
      kind: j.kind,
      subject_id: j.subjectId,
      shop_id: j.shopId,
      mode: j.mode,
      due_at: j.dueAt,
      run_at: j.runAt,
      attempt: 0,
      payload: j.payload,
      state: 'pending' as const,
      last_error: null,
      created_at: j.createdAt,
      finished_at: null,
      claimed_by: j.claim?.by ?? null,
      claim_token: j.claim?.token ?? null,
      claim_until: j.claim?.until ?? null,
    };
    for (const sink of watching) sink({ id: j.id, dueAt: j.dueAt, row });
  }
}
