import type { Tx } from '../../platform/storage/store';
import { nextPaymentSeqsPg } from '../../platform/storage/dialect';
import type { Mode } from '../../platform/clock';
import type { PaymentRow } from '../bank-port/payment';
import type { PaymentsCore } from './core';
import { creationBody, createWithAnswer, draftPayment, opensAtOnce, type PaymentInput } from './create';
import { ensureLinkSweep } from './expiry';
import { insertPayments } from './store';

// Creates of payments on PostgreSQL, gathered. A node runs one create transaction at a time for each
// CREATE_BATCH.connections_each connections of its pool (at least one); creates that arrive while all are under
// way wait, and the next transaction writes them all (up to max_rows) with one statement per table. A create
// alone is eight statements in three round trips, each paid for by the node and the database alike; gathered,
// one transaction's statements serve many creates.
//
// What holds for each payment is what holds when it is created alone: its number comes from the sequence, its
// clock is its shop's clock read in the transaction, its event is appended with it, and its link's expiry is
// covered by its shop's sweep (one check per shop and mode, at the earliest expiry of the batch). Nothing of a
// batch is seen before its commit. If the batch's transaction fails, nothing of it was written, and each of its
// creates runs again alone (so one create that cannot be made fails only itself); if its COMMIT's outcome is
// unknown, or the database is away, each create answers so, as it would alone, and is not run again. A create
// with an Idempotency-Key is never gathered: its record is claimed in its own transaction.

/** How creates are gathered (named limits). */
export const CREATE_BATCH = {
  /**
   * Connections of the node's pool (--db-pool) for each create transaction under way at once; the rest serve
   * reads and other writes. Fewer transactions under way make larger batches and less CPU per create; with more
   * than a few, creates cost as much as alone (measured with 32 clients: one or two under way on a pool of 10
   * were best, eight no better than no gathering).
   */
  connections_each: 5,
  /** Most creates one transaction writes. */
  max_rows: 64,
} as const;

/** What one create answers: its row and the body of its 201. */
export interface CreatedPayment {
  row: PaymentRow;
  body: Record<string, unknown>;
}

/**
 * Create pending payments (none with a saved method) in the caller's transaction, written together: the clocks of
 * their shops and their numbers in one round trip, then every payment, every event and each shop's sweep check
 * in the next. The rows with the bodies of their 201s, in the order of `inputs`.
 */
async function createPaymentsTx(core: PaymentsCore, tx: Tx, inputs: PaymentInput[]): Promise<Array<{ row: PaymentRow; body: Record<string, unknown> }>> {
  const clockOf = (i: PaymentInput): string => `${i.mode} ${i.shopId}`;
  const clocks = [...new Map(inputs.map((i) => [clockOf(i), i])).values()];
  const [seqs, ...nows] = await Promise.all([nextPaymentSeqsPg(tx, inputs.length), ...clocks.map((i) => core.clocks.now(tx, i.shopId, i.mode))]);
  const nowOf = new Map(clocks.map((i, k) => [clockOf(i), nows[k]]));
  // Made side by side: a live shop's bank is found by reading its acquirer, and those reads share a round trip.
  const drafts = await Promise.all(
    inputs.map(async (input) => draftPayment(await core.banks.for(tx, input.shopId, input.mode), tx, input, nowOf.get(clockOf(input))!)),
  );
  // One sweep check per shop and mode, at the earliest expiry among its new links.
  const sweeps = new Map<string, { shop_id: string; mode: Mode; expires_at: number }>();
  for (const { params: p } of drafts) {
    const k = `${p.mode} ${p.shop_id}`;
    const s = sweeps.get(k);
    if (!s || p.expires_at < s.expires_at) sweeps.set(k, { shop_id: p.shop_id, mode: p.mode, expires_at: p.expires_at });
  }
  const [rows] = await Promise.all([
    insertPayments(tx, drafts.map((d) => d.params), seqs),
    core.events.appendMany(tx, drafts.map((d) => d.created)),
    ...[...sweeps.values()].map((s) => ensureLinkSweep(core.scheduler, tx, s)),
  ]);
  return rows.map((row, i) => ({ row, body: creationBody(core, drafts[i].bank, row) }));
}

interface Waiting {
  input: PaymentInput;
  /** Real time it began to wait. */
  since: number;
  resolve(v: CreatedPayment): void;
  reject(err: unknown): void;
}

function unavailable(message: string): Error {
  return Object.assign(new Error(message), { code: 'DB_UNAVAILABLE' });
}

/** Errors after which a create is not run again alone: the outcome is unknown, or the database is away. */
const FINAL = new Set(['DB_COMMIT_UNKNOWN', 'DB_UNAVAILABLE']);

/** The core as POST /v1/public/payments needs it: with the node's gathered creates. */
export interface PaymentCreatesCore extends PaymentsCore {
  readonly creates: PaymentCreates;
}

/** The creates of one node, gathered into shared transactions on PostgreSQL (see the top of this file). */
export class PaymentCreates {
  private readonly waiting: Waiting[] = [];
  private running = 0;
  private readonly inFlight: number;

  /**
   * `waitMs`: the longest a create waits for its transaction, as long as a request may wait for a connection;
   * past it the create is refused (503) before anything is written, as a wait for a connection would be.
   */
  constructor(
    private readonly core: PaymentsCore,
    private readonly waitMs: number,
  ) {
    this.inFlight = Math.max(1, Math.floor(core.config.dbPool / CREATE_BATCH.connections_each));
  }

  /** Creates waiting for a transaction now (a test waits on it). */
  get waitingCount(): number {
    return this.waiting.length;
  }

  /** Whether a create may be gathered: on PostgreSQL, without a saved method (whose session opens at once). */
  takes(input: PaymentInput): boolean {
    return this.core.store.engine === 'postgres' && !opensAtOnce(input);
  }

  /** Create the payment: at once if a transaction slot is free, else with the creates waiting beside it. */
  create(input: PaymentInput): Promise<CreatedPayment> {
    return new Promise<CreatedPayment>((resolve, reject) => {
      this.waiting.push({ input, since: this.core.clocks.real(), resolve, reject });
      this.pump();
    });
  }

  private pump(): void {
    const now = this.core.clocks.real();
    while (this.waiting.length > 0 && now - this.waiting[0].since > this.waitMs) {
      const late = this.waiting.shift()!;
      late.reject(unavailable(`the database is unavailable: a payment create waited ${now - late.since} ms for a transaction (at most ${this.waitMs} ms)`));
    }
    while (this.running < this.inFlight && this.waiting.length > 0) {
      const batch = this.waiting.splice(0, CREATE_BATCH.max_rows);
      this.running++;
      void this.run(batch).finally(() => {
        this.running--;
        this.pump();
      });
    }
  }

  private async run(batch: Waiting[]): Promise<void> {
    try {
      const made = await this.core.store.write((tx) => createPaymentsTx(this.core, tx, batch.map((w) => w.input)));
      batch.forEach((w, i) => w.resolve(made[i]));
    } catch (err) {
      if (batch.length === 1 || FINAL.has((err as { code?: string }).code ?? '')) {
        for (const w of batch) w.reject(err);
        return;
      }
      await Promise.all(batch.map((w) => this.alone(w.input).then(w.resolve, w.reject)));
    }
  }

  private async alone(input: PaymentInput): Promise<CreatedPayment> {
    return this.core.store.write((tx) => createWithAnswer(this.core, tx, input));
  }
}
