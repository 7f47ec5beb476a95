import type { Reader, Tx } from '../../platform/storage/store';
import { lastIssuedEventSeq, streamEventsSql } from '../../platform/storage/dialect';
import type { EventFeed } from '../../platform/storage/store';
import type { Mode } from '../../platform/clock';
import { eventId } from '../../platform/util/ids';
import { iso } from '../../platform/util/time';

/** An SSE kind and payload, and optionally a webhook. */
export interface EventInput {
  merchantId: string;
  shopId: string;
  mode: Mode;
  kind: string;
  payload: Record<string, unknown>;
  /** Time on the object's clock. */
  at: number;
  /** Event name, object snapshot, and a payment's own URL. */
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

/** The stream's last position: on SQLite the highest event seq ever issued, on PostgreSQL the last numbered position. */
export function lastIssuedSeq(q: Reader): Promise<number> {
  return lastIssuedEventSeq(q);
}

/**
 * At most `limit`, in stream order. On SQLite a position is the seq (one writer: seq order is commit order); on
 * PostgreSQL the numbering pass's position (postgres/events.ts), returned as `seq`.
 */
export function eventsAfter(q: Reader, shopId: string, mode: Mode, afterSeq: number, limit: number): Promise<EventRow[]> {
  return q.all<EventRow>(streamEventsSql(q), shopId, mode, afterSeq, limit);
}

/**
 * Runs inside the appending transaction (webhook deliveries are written in the same commit), one after another,
 * touching the database only through `tx`. A domain reacting to another's objects uses its typed hooks instead.
 */
export type EventSink = (tx: Tx, row: EventRow) => Promise<void>;
/** Called after commit (SSE fan-out). */
export type EventListener = (row: EventRow) => void;

const INSERT_EVENT = `INSERT INTO events (id, merchant_id, shop_id, mode, kind, payload, at, webhook_event, webhook_data, webhook_url, payment_id, payout_id)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`;
const INSERT_ONE_EVENT = `${INSERT_EVENT} RETURNING seq`;
const EVENT_TUPLE = ', (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)';

export class Events {
  private readonly sinks: EventSink[] = [];
  private readonly listeners = new Set<EventListener>();

  /** `feed`: every node's events (PostgreSQL); null on SQLite, where local commits are all. */
  constructor(private readonly feed: EventFeed | null = null) {}

  /** Resolves once every event committed from now on will reach subscribeStream's listeners. */
  followStream(): Promise<void> {
    return this.feed ? this.feed.follow() : Promise.resolve();
  }

  unfollowStream(): void {
    this.feed?.unfollow();
  }

  /** Every committed event of every process, once, in stream order (`row.seq`); on PostgreSQL only while a stream follows. */
  subscribeStream(listener: EventListener): () => void {
    if (this.feed) return this.feed.subscribe((row) => listener(row as unknown as EventRow));
    return this.subscribe(listener);
  }

  addSink(sink: EventSink): void {
    this.sinks.push(sink);
  }

  subscribe(listener: EventListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Sinks run now, in order; listeners after commit. */
  async append(tx: Tx, e: EventInput): Promise<EventRow> {
    return (await this.appendMany(tx, [e]))[0];
  }

  /** In one statement, numbered in the order given; sinks run for each in turn, listeners after commit. */
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
      // By id: the order RETURNING gives is not promised.
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

export function sseData(row: EventRow): { kind: string; payload: unknown; at: string } {
  return { kind: row.kind, payload: JSON.parse(row.payload), at: iso(row.at) };
}
