/**
 * Where each Idempotency-Key's record is, in memory. Records are rows in the order they were made (seq), so a
 * keyed create appends its record to the page the group's other records go to, instead of writing a leaf at the
 * key's place in a table sorted by key: clients make their keys at random (UUIDs), and that leaf was a page of
 * its own for nearly every keyed create. The table is the truth and this index only a guide: a key hashes to the
 * seqs of records that may be it, and the caller reads each one and compares merchant, mode and key. So an entry
 * left behind (a body rolled back, a record deleted) costs one read; a record missing from the index would make a
 * replay create a second object, and the rules below keep that from happening:
 * - an entry is added as the record is inserted, before its body's commit, so that later bodies of the same
 *   group find it;
 * - an entry is removed only after the commit that deleted its record (Tx.afterCommit);
 * - seqs are never reused (AUTOINCREMENT), so removing (hash, seq) never removes a newer record's entry;
 * - a keyed create waits until the index holds every record (`ready`), read from the table in slices after start.
 * Only the server writes records; it holds the database's server lock, so no other writer adds one unseen.
 */
import type { Store } from '../db/store';

/** Records read per slice while the index is built at start (a few ms each); the event loop serves requests between slices. */
export const KEY_INDEX_LOAD_SLICE = 20_000;

/** A 30-bit FNV-1a hash of merchant, mode and key: small integers, which a Map keeps without boxing them. */
export function keyHash(merchant: Buffer, mode: string, key: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < merchant.length; i++) h = Math.imul(h ^ merchant[i], 0x01000193);
  h = Math.imul(h ^ (mode === 'live' ? 1 : 0), 0x01000193);
  for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193);
  return (h >>> 2) & 0x3fffffff;
}

const NONE: readonly number[] = [];

export class KeyIndex {
  /** Hash → the seq of the one record with it, or the seqs of several (a collision, or a key whose record was replaced). */
  private readonly seqs = new Map<number, number | number[]>();
  private loaded = false;
  private loading: Promise<void> | null = null;

  constructor(private readonly store: Store) {}

  /** Resolves once every record the table held at start is indexed; null once that is so. A failed read is tried again by the next call. */
  ready(): Promise<void> | null {
    if (this.loaded) return null;
    this.loading ??= this.load().catch((err: unknown) => {
      this.loading = null;
      throw err;
    });
    return this.loading;
  }

  /** The seqs of the records that may have this hash (read each and compare its merchant, mode and key). */
  candidates(hash: number): readonly number[] {
    const v = this.seqs.get(hash);
    return v === undefined ? NONE : typeof v === 'number' ? [v] : v;
  }

  add(hash: number, seq: number): void {
    const v = this.seqs.get(hash);
    if (v === undefined) this.seqs.set(hash, seq);
    else if (typeof v === 'number') this.seqs.set(hash, [v, seq]);
    else v.push(seq);
  }

  /** Forget the record `seq` (call only once its deletion is committed). */
  remove(hash: number, seq: number): void {
    const v = this.seqs.get(hash);
    if (v === undefined) return;
    if (typeof v === 'number') {
      if (v === seq) this.seqs.delete(hash);
      return;
    }
    const at = v.indexOf(seq);
    if (at >= 0) v.splice(at, 1);
    if (v.length === 1) this.seqs.set(hash, v[0]);
    else if (v.length === 0) this.seqs.delete(hash);
  }

  private async load(): Promise<void> {
    let after = 0;
    // Not within the caller's turn: a server announces that it listens first.
    await new Promise<void>((resolve) => setImmediate(resolve));
    for (;;) {
      // Closed while loading (a server stopped right after its start): whoever waits must not go on with part of it.
      if (!this.store.isOpen) throw new Error('the database closed before the idempotency index was read');
      // The hash each record was stored with, a slice at a time in seq order (committed records: outside any transaction).
      const rows = await this.store.all<{ seq: number; key_hash: number }>('SELECT seq, key_hash FROM idempotency_keys WHERE seq > ? ORDER BY seq LIMIT ?', after, KEY_INDEX_LOAD_SLICE);
      for (const r of rows) this.add(r.key_hash, r.seq);
      if (rows.length < KEY_INDEX_LOAD_SLICE) break;
      after = rows[rows.length - 1].seq;
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
    this.loaded = true;
  }
}
