import type { Reader, Tx } from '../../platform/storage/store';
import { lastIssuedEventSeq, streamEventsSql } from '../../platform/storage/dialect';
import type { EventFeed } from '../../platform/storage/store';
import type { Mode } from '../../platform/clock';
import { eventId } from '../../platform/util/ids';
import { iso } from '../../platform/util/time';

/** An event as a state change records it: an SSE kind and payload, and optionally a webhook. */
export interface EventInput {
  merchantId: string;
  shopId: string;
  mode: Mode;
  /** SSE kind, e.g. `payment.status_changed`. */
  kind: string;
  payload: Record<string, unknown>;
  /** Time on the object's clock. */
  at: number;
  /** The webhook this change sends, if any: event name, object snapshot, and a payment's own URL. */
  webhook?: { event: string; data: unknown; url?: string | null };
  paymentId?: string;
  payoutId?: string;
}

export interface EventRow {
  seq: number;
  id: string;
  merchant_id: string;
  shop_id: string;
  mode: Mode;
  kind: string;
  payload: string;
  at: number;
  webhook_event: string | null;
  webhook_data: string | null;
  webhook_url: string | null;
  payment_id: string | null;
  payout_id: string | null;
}

/**
 * The stream's last position (`id:` of its events): on SQLite the highest event sequence number ever issued
 * (deleted rows included: AUTOINCREMENT never reuses one), on PostgreSQL the last commit-ordered position.
 */
export function lastIssuedSeq(q: Reader): Promise<number> {
  return lastIssuedEventSeq(q);
}

/**
 * A shop's events of a mode after stream position `afterSeq`, in stream order, at most `limit`. On SQLite a
 * position is the event's seq (one writer: seq order is commit order); on PostgreSQL it is the position a
 * numbering pass gave it (db/pg-events.ts), and `seq` of the rows returned holds that position.
 */
export function eventsAfter(q: Reader, shopId: string, mode: Mode, afterSeq: number, limit: number): Promise<EventRow[]> {
  return q.all<EventRow>(streamEventsSql(q), shopId, mode, afterSeq, limit);
}

/**
 * Called inside the appending transaction (webhook deliveries are written here, in the same commit). Sinks run
 * one after another, each awaited, and touch the database only through `tx`. A domain that reacts to another's
 * objects uses that domain's typed hooks (payments/hooks.ts), not a sink.
 */
export type EventSink = (tx: Tx, row: EventRow) => Promise<void>;
/** Called after commit (SSE fan-out). */
export type EventListener = (row: EventRow) => void;

const INSERT_EVENT = `INSERT INTO events (id, merchant_id, shop_id, mode, kind, payload, at, webhook_event, webhook_data, webhook_url, payment_id, payout_id)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`;
/** One event, and its number. */
const INSERT_ONE_EVENT = `${INSERT_EVENT} RETURNING seq`;
/** One more row of INSERT_EVENT's VALUES. */
const EVENT_TUPLE = ', (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)';

/** The append-only event log and its subscribers. */
export class Events {
  private readonly sinks: EventSink[] = [];
  private readonly listeners = new Set<EventListener>();

  /** `feed`: the database's own feed of every node's events (PostgreSQL); null when local commits are all (SQLite). */
  constructor(private readonly feed: EventFeed | null = null) {}

  /** A stream opens: resolves once every event committed from now on will reach subscribeStream's listeners. */
  followStream(): Promise<void> {
    return this.feed ? this.feed.follow() : Promise.resolve();
  }

  /** A stream that followed has ended. */
  unfollowStream(): void {
    this.feed?.unfollow();
  }

  /**
   * Subscribe to the event stream's order: every committed event, of every process sharing the database, once,
   * in increasing stream position (`row.seq`). Local commits on SQLite; the database's feed on PostgreSQL, which
   * reads only while a stream follows it (followStream).
   */
  subscribeStream(listener: EventListener): () => void {
    if (this.feed) return this.feed.subscribe((row) => listener(row as unknown as EventRow));
    return this.subscribe(listener);
  }

  addSink(sink: EventSink): void {
    this.sinks.push(sink);
  }

  /** Subscribe to committed events; returns the unsubscribe function. */
  subscribe(listener: EventListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Append an event in the caller's transaction; sinks run now, in order, listeners after commit. */
  async append(tx: Tx, e: EventInput): Promise<EventRow> {
    return (await this.appendMany(tx, [e]))[0];
  }

  /**
   * Append events in one statement, in the order given (their numbers increase with it); then the sinks run for
   * each in turn, and listeners after commit.
   */
  async appendMany(tx: Tx, inputs: EventInput[]): Promise<EventRow[]> {
    const rows: EventRow[] = [];
    const values: unknown[] = [];
    for (const e of inputs) {
      const payload = JSON.stringify(e.payload);
      const webhookData = e.webhook ? JSON.stringify(e.webhook.data) : null;
      const row: EventRow = {
        seq: 0,
        id: eventId(e.at),
        merchant_id: e.merchantId,
        shop_id: e.shopId,
        mode: e.mode,
        kind: e.kind,
        payload,
        at: e.at,
        webhook_event: e.webhook?.event ?? null,
        webhook_data: webhookData,
        webhook_url: e.webhook?.url ?? null,
        payment_id: e.paymentId ?? null,
        payout_id: e.payoutId ?? null,
      };
      rows.push(row);
      values.push(row.id, row.merchant_id, row.shop_id, row.mode, row.kind, payload, row.at, row.webhook_event, webhookData, row.webhook_url, row.payment_id, row.payout_id);
    }
    if (rows.length === 1) {
      rows[0].seq = Number((await tx.run(INSERT_ONE_EVENT, ...values)).lastInsertRowid);
    } else {
      const insert = `${INSERT_EVENT}${EVENT_TUPLE.repeat(rows.length - 1)}`;
      // Each row's number found by its id: the order RETURNING gives is not promised.
      const seqs = new Map((await tx.all<{ seq: number; id: string }>(`${insert} RETURNING seq, id`, ...values)).map((r) => [r.id, Number(r.seq)]));
      for (const row of rows) row.seq = seqs.get(row.id)!;
    }
    for (const row of rows) for (const sink of this.sinks) await sink(tx, row);
    tx.afterCommit(() => {
      this.feed?.kick();
      for (const row of rows) for (const l of this.listeners) l(row);
    });
    return rows;
  }
}

/** The SSE data object of an event: `{kind, payload, at}`. */
export function sseData(row: EventRow): { kind: string; payload: unknown; at: string } {
  return { kind: row.kind, payload: JSON.parse(row.payload), at: iso(row.at) };
}
