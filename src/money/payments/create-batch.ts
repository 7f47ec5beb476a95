import type { Tx } from '../../platform/storage/store';
import { nextPaymentSeqsPg } from '../../platform/storage/dialect';
import type { Mode } from '../../platform/clock';
import type { PaymentRow } from '../bank-port/payment';
import type { PaymentsCore } from './core';
import { creationBody, createWithAnswer, draftPayment, opensAtOnce, type PaymentInput } from './create';
import { LINK_SWEEP_JOB } from './state';
import { insertPayments } from './store';

// Creates of payments on PostgreSQL, gathered: a node runs one create transaction per
// CREATE_BATCH.connections_each pool connections; creates arriving meanwhile wait and the next transaction writes
// them all with one statement per table (a create alone is eight statements in three round trips).
//
// Each payment gets what it would alone: its number from the sequence, its shop's clock read in the transaction,
// its event, its shop's sweep check. If the batch's transaction fails, each create runs again alone (one bad
// create fails only itself); if its COMMIT's outcome is unknown or the database is away, each answers so and is
// not run again. A create with an Idempotency-Key is never gathered: its record is claimed in its own transaction.

export const CREATE_BATCH = {
  /**
   * Pool connections (--db-pool) per create transaction under way; the rest serve other work. Fewer make larger batches
   * and less CPU per create (32 clients, pool of 10: one or two under way were best, eight no better than no gathering).
   */
  connections_each: 5,
  max_rows: 64,
} as const;

export interface CreatedPayment {
  row: PaymentRow;
  body: Record<string, unknown>;
}

/**
 * Pending payments (none with a saved method) in the caller's transaction: clocks and numbers in one round trip,
 * payments, events and sweep checks in the next. Results in the order of `inputs`.
 */
async function createPaymentsTx(core: PaymentsCore, tx: Tx, inputs: PaymentInput[]): Promise<Array<{ row: PaymentRow; body: Record<string, unknown> }>> {
  const clockOf = (i: PaymentInput): string => `${i.mode} ${i.shopId}`;
  const clocks = [...new Map(inputs.map((i) => [clockOf(i), i])).values()];
  const [seqs, ...nows] = await Promise.all([nextPaymentSeqsPg(tx, inputs.length), ...clocks.map((i) => core.clocks.now(tx, i.shopId, i.mode))]);
  const nowOf = new Map(clocks.map((i, k) => [clockOf(i), nows[k]]));
  // Side by side: a live shop's bank is found by reading its acquirer, and those reads share a round trip.
  const drafts = await Promise.all(
    inputs.map(async (input) => {
      const bank = await core.banks.for(tx, input.shopId, input.mode);
      return draftPayment(bank, input, nowOf.get(clockOf(input))!, await bank.describePayment(tx, input));
    }),
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
    ...[...sweeps.values()].map((s) => core.scheduler.ensureDueBy(tx, { kind: LINK_SWEEP_JOB, subjectId: `${s.shop_id}/${s.mode}`, shopId: s.shop_id, mode: s.mode, dueAt: s.expires_at })),
  ]);
  return rows.map((row, i) => ({ row, body: creationBody(core, drafts[i].bank, row) }));
}

interface Waiting {
  input: PaymentInput;
  since: number;
  resolve(v: CreatedPayment): void;
  reject(err: unknown): void;
}

/** After these a create is not run again alone: the outcome is unknown, or the database is away. */
const FINAL = new Set(['DB_COMMIT_UNKNOWN', 'DB_UNAVAILABLE']);

export interface PaymentCreatesCore extends PaymentsCore {
  readonly creates: PaymentCreates | undefined;
}

export class PaymentCreates {
  private readonly waiting: Waiting[] = [];
  private running = 0;
  private readonly inFlight: number;

  /** `waitMs`: as long as a request may wait for a connection; past it the create is refused (503), nothing written. */
  constructor(
    private readonly core: PaymentsCore,
    private readonly waitMs: number,
  ) {
    this.inFlight = Math.max(1, Math.floor(core.config.dbPool / CREATE_BATCH.connections_each));
  }

  /** A test waits on it. */
  get waitingCount(): number {
    return this.waiting.length;
  }

  takes(input: PaymentInput): boolean {
    return !opensAtOnce(input);
  }

  /** At once if a transaction slot is free, else with the creates waiting beside it. */
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
      const message = `the database is unavailable: a payment create waited ${now - late.since} ms for a transaction (at most ${this.waitMs} ms)`;
      late.reject(Object.assign(new Error(message), { code: 'DB_UNAVAILABLE' }));
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
      await Promise.all(batch.map((w) => this.core.store.write((tx) => createWithAnswer(this.core, tx, w.input)).then(w.resolve, w.reject)));
    }
  }
}
