import type { Reader, Tx } from '../../platform/storage/store';
import { lastIssuedEventSeq, streamEventsSql } from '../../platform/storage/dialect';
import type { EventFeed } from '../../platform/storage/store';
import type { Mode } from '../../platform/clock';
import { eventId } from '../../platform/util/ids';

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
 * touching the database only through `tx`; one with nothing to do returns nothing. A domain reacting to another's objects uses its typed hooks instead.
 */
export type EventSink = (tx: Tx, row: EventRow) => Promise<unknown> | undefined;
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
    const row = eventRow(e);
    const { lastInsertRowid } = await tx.run(INSERT_ONE_EVENT, row.id, row.merchant_id, row.shop_id, row.mode, row.kind, row.payload, row.at, row.webhook_event, row.webhook_data, row.webhook_url, row.payment_id, row.payout_id);
    row.seq = Number(lastInsertRowid);
    for (const sink of this.sinks) {
      const done = sink(tx, row);
      if (done) await done;
    }
    tx.afterCommit(() => {
      this.feed?.kick();
      for (const l of this.listeners) l(row);
    });
    return row;
  }

  /** In one statement, numbered in the order given; sinks run for each in turn, listeners after commit. */
  async appendMany(tx: Tx, inputs: EventInput[]): Promise<EventRow[]> {
    if (inputs.length === 1) return [await this.append(tx, inputs[0])];
    const rows = inputs.map(eventRow);
    const insert = `${INSERT_EVENT}${EVENT_TUPLE.repeat(rows.length - 1)}`;
    // By id: the order RETURNING gives is not promised.
    const seqs = new Map((await tx.all<{ seq: number; id: string }>(`${insert} RETURNING seq, id`, ...rows.flatMap((r) => [r.id, r.merchant_id, r.shop_id, r.mode, r.kind, r.payload, r.at, r.webhook_event, r.webhook_data, r.webhook_url, r.payment_id, r.payout_id]))).map((r) => [r.id, Number(r.seq)]));
    for (const row of rows) row.seq = seqs.get(row.id)!;
    for (const row of rows) for (const sink of this.sinks) await sink(tx, row);
    tx.afterCommit(() => {
      this.feed?.kick();
      for (const row of rows) for (const l of this.listeners) l(row);
    });
    return rows;
  }
}

/** The row of an event before its insert numbers it. */
function eventRow(e: EventInput): EventRow {
  return {
    seq: 0,
    id: eventId(e.at),
    merchant_id: e.merchantId,
    shop_id: e.shopId,
    mode: e.mode,
    kind: e.kind,
    payload: JSON.stringify(e.payload),
    at: e.at,
    webhook_event: e.webhook?.event ?? null,
    webhook_data: e.webhook ? JSON.stringify(e.webhook.data) : null,
    webhook_url: e.webhook?.url ?? null,
    payment_id: e.paymentId ?? null,
    payout_id: e.payoutId ?? null,
  };
}


export function sseData(row: EventRow): { kind: string; payload: unknown; at: string } {
  return { kind: row.kind, payload: JSON.parse(row.payload), at: new Date(row.at).toISOString() };
}
