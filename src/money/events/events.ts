import type { ServerResponse } from 'node:http';
import type { Ctx, Reply } from '../../platform/http/types';
import type { Mode } from '../../platform/clock';
import type { Config } from '../../platform/config';
import type { Logger } from '../../platform/log';
import type { EventFeed, Reader, Tx } from '../../platform/storage/store';
import { lastIssuedEventSeq, streamEventsSql } from '../../platform/storage/dialect';
import { ApiError, badRequest } from '../../platform/http/errors';
import { keyStanding } from '../../platform/auth/authenticate';
import { eventId } from '../../platform/util/ids';
import { encodeSse, encodeSseComment } from './sse';

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

export type EventRow = ReturnType<typeof eventRow>;

/** Runs, in turn, in the transaction of each event that sends a webhook, through `tx` only; one with nothing to do returns nothing. */
export type EventSink = (tx: Tx, row: EventRow) => Promise<unknown> | undefined;
/** Called after commit (SSE fan-out). */
export type EventListener = (row: EventRow) => void;

const INSERT_EVENT = `INSERT INTO events (id, merchant_id, shop_id, mode, kind, payload, at, webhook_event, webhook_data, webhook_url, payment_id, payout_id)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`;
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
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  addSink(sink: EventSink): void {
    this.sinks.push(sink);
  }

  /** Sinks run now, in order; listeners after commit (see EventStreamHub: it listens while a stream is open). */
  async append(tx: Tx, e: EventInput): Promise<EventRow> {
    const row = eventRow(e);
    const { lastInsertRowid } = await tx.run(`${INSERT_EVENT} RETURNING seq`, row.id, row.merchant_id, row.shop_id, row.mode, row.kind, row.payload, row.at, row.webhook_event, row.webhook_data, row.webhook_url, row.payment_id, row.payout_id);
    row.seq = Number(lastInsertRowid);
    if (row.webhook_event) {
      for (const sink of this.sinks) {
        const done = sink(tx, row);
        if (done) await done;
      }
    }
    // To the streams open at commit. On SQLite with none open now there is nothing to call: a stream opening later
    // replays the event, as its read waits for this transaction (store.ts).
    if (this.feed || this.listeners.size > 0) {
      tx.afterCommit(() => {
        this.feed?.kick();
        for (const l of this.listeners) l(row);
      });
    }
    return row;
  }

  /** In one statement, numbered in the order given; sinks run for each in turn (as append), listeners after commit. */
  async appendMany(tx: Tx, inputs: EventInput[]): Promise<EventRow[]> {
    if (inputs.length === 1) return [await this.append(tx, inputs[0])];
    const rows = inputs.map(eventRow);
    const insert = `${INSERT_EVENT}${EVENT_TUPLE.repeat(rows.length - 1)} RETURNING seq, id`;
    // By id: the order RETURNING gives is not promised.
    const seqs = new Map((await tx.all<{ seq: number; id: string }>(insert, ...rows.flatMap((r) => [r.id, r.merchant_id, r.shop_id, r.mode, r.kind, r.payload, r.at, r.webhook_event, r.webhook_data, r.webhook_url, r.payment_id, r.payout_id]))).map((r) => [r.id, Number(r.seq)]));
    for (const row of rows) {
      row.seq = seqs.get(row.id)!;
      if (row.webhook_event) for (const sink of this.sinks) await sink(tx, row);
    }
    if (this.feed || this.listeners.size > 0) {
      tx.afterCommit(() => {
        this.feed?.kick();
        for (const row of rows) for (const l of this.listeners) l(row);
      });
    }
    return rows;
  }
}

/** The row of an event before its insert numbers it. */
function eventRow(e: EventInput) {
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

/** The snapshot as stored, so retries send the same bytes; a delivery and the stream's webhook format (`kopek listen`) both make it. */
export function webhookBody(eventId: string, event: string, createdAt: string, dataJson: string): string {
  return `{"id":${JSON.stringify(eventId)},"event":${JSON.stringify(event)},"created_at":${JSON.stringify(createdAt)},"data":${dataJson}}`;
}

/** `events`: every event as `{kind, payload, at}`; `webhook`: the exact body a delivery POSTs, for `kopek listen`. */
export type StreamFormat = 'events' | 'webhook';

/** The SSE text of one event in a format; `id:` is the event's sequence number in both, for Last-Event-ID. */
export function encodeStreamEvent(row: EventRow, format: StreamFormat): string {
  if (format === 'events') {
    return encodeSse({ id: row.seq, event: row.kind, data: JSON.stringify({ kind: row.kind, payload: JSON.parse(row.payload), at: new Date(row.at).toISOString() }) });
  }
  const event = row.webhook_event!;
  return encodeSse({ id: row.seq, event, data: webhookBody(row.id, event, new Date(row.at).toISOString(), row.webhook_data ?? 'null') });
}

/** Unsent bytes before a client is cut, events per replay page, and how often streams check their key (revocation). */
export const STREAM_LIMITS = { buffer_bytes: 1024 * 1024, replay_page: 500, key_check_ms: 1000 };

/** By the kind's object (before the dot): the scopes that read it through the API (null: none); an object not listed goes to nobody. */
export const STREAM_SCOPES: Readonly<Record<string, readonly string[] | null>> = {
  payment: null,
  refund: null,
  payout: ['api:payouts:sbp', 'api:payouts:card', 'api:payouts:account', 'api:reports:read'],
  token: ['api:recurrent:bind'],
  subscription: ['api:recurrent:bind'],
};

export function mayRead(scopes: ReadonlySet<string>, kind: string): boolean {
  const object = kind.slice(0, kind.indexOf('.'));
  if (!Object.hasOwn(STREAM_SCOPES, object)) return false;
  const need = STREAM_SCOPES[object];
  return need === null || need.some((s) => scopes.has(s));
}

class Client {
  live = false;
  /** An event of this client's shop and mode was dispatched while it was still replaying. */
  missed = false;
  closed = false;

  constructor(
    readonly res: ServerResponse,
    readonly shopId: string,
    readonly mode: Mode,
    readonly keyId: string,
    public scopes: ReadonlySet<string>,
    public lastSent: number,
    private readonly hub: EventStreamHub,
    readonly format: StreamFormat,
  ) {}

  /** Skips events at or before the last sent one, of a kind the key may not read, or (webhook format) sending no webhook. */
  sendEvent(row: EventRow): void {
    if (row.seq <= this.lastSent) return;
    this.lastSent = row.seq;
    // The kind the key's scopes are checked against: the webhook event in the webhook format (null: not sent).
    const kind = this.format === 'webhook' ? row.webhook_event : row.kind;
    if (kind === null || !mayRead(this.scopes, kind)) return;
    this.write(encodeStreamEvent(row, this.format));
  }

  /** A client whose unsent bytes pass the limit cannot keep up and is disconnected. */
  write(text: string): void {
    if (this.closed) return;
    this.res.write(text);
    if (this.live && this.res.writableLength > this.hub.bufferLimitBytes) this.close('slow client: send buffer over limit');
  }

  close(reason: string): void {
    if (this.closed) return;
    this.closed = true;
    this.hub.drop(this, reason);
    if (reason.startsWith('slow')) this.res.destroy();
    else this.res.end();
  }
}

export interface StreamDeps {
  readonly events: Pick<Events, 'subscribeStream' | 'followStream' | 'unfollowStream'>;
  /** A replayed page goes out once on disk. */
  readonly store: Reader;
  readonly config: Pick<Config, 'ssePingSeconds'>;
  readonly log: Logger;
  /** Read at each open: no new stream opens during shutdown. */
  readonly closing: boolean;
}

/**
 * A client replays, then goes live after a read during which nothing of its shop and mode was dispatched (else it
 * reads again), so no event falls between the two and none is sent twice.
 */
export class EventStreamHub {
  private readonly byKey = new Map<string, Set<Client>>();
  private count = 0;
  private pingTimer: NodeJS.Timeout | null = null;
  private unsubscribe: (() => void) | null = null;
  /** Runs while streams are open: ends revoked keys' streams and follows scope changes. */
  private keyChecks: NodeJS.Timeout | null = null;
  private checking = false;
  bufferLimitBytes = STREAM_LIMITS.buffer_bytes;
  /** Which database a stream reads: its random id and when it was made (schema.sql, `database_identity`); made with the schema and never changes. */
  private identity: Promise<{ id: string; created_at: number }> | null = null;

  constructor(private readonly deps: StreamDeps) {}

  start(): void {
    const ping_ms = this.deps.config.ssePingSeconds * 1000;
    if (ping_ms > 0 && !this.pingTimer) this.pingTimer = setInterval(() => this.ping(), ping_ms).unref();
  }

  get clientCount(): number {
    return this.count;
  }

  /** Without `after`, after the last event issued, through the same replay: an event committed while it opens is sent too. */
  async open(ctx: Ctx, after: number | null, format: StreamFormat = 'events'): Promise<void> {
    const { res, req } = ctx;
    const auth = ctx.auth!;
    this.identity ??= this.deps.store
      .get<{ id: string; created_at: number }>('SELECT id, created_at FROM database_identity LIMIT 1')
      .then((row) => row ?? Promise.reject(new Error('cannot open the event stream: the database has no identity row (database_identity)')))
      .catch((err: unknown) => {
        this.identity = null;
        throw err;
      });
    const identity = await this.identity;
    // On SQLite the highest event seq ever issued, on PostgreSQL the last numbered position.
    const issued = await lastIssuedEventSeq(this.deps.store);
    // Shutdown may have begun (and closed every stream) during the read: open no new one.
    if (this.deps.closing) throw new ApiError(503, 'unavailable', 'Cannot serve the request: the server is shutting down', undefined, { Connection: 'close' });
    if (after !== null && after > issued) {
      // An id this database never issued (wiped or restored): resuming would skip events until the sequence caught up.
      this.deps.log.warn('sse Last-Event-ID beyond the event log; streaming from now', { request_id: ctx.requestId, last_event_id: after, last_seq: issued });
      after = issued;
    }
    // From here every new event reaches this node's dispatch (PostgreSQL's feed).
    await this.deps.events.followStream();
    if (this.deps.closing) {
      this.deps.events.unfollowStream();
      throw new ApiError(503, 'unavailable', 'Cannot serve the request: the server is shutting down', undefined, { Connection: 'close' });
    }
    req.socket.setNoDelay(true);
    req.socket.setTimeout(0);
    res.writeHead(200, {
      'Content-Type': 'text/event-stream; charset=utf-8',
      'Cache-Control': 'no-cache, no-transform',
      Connection: 'keep-alive',
      'X-Accel-Buffering': 'no',
      // What lets a client resume across a restart: one finding another database id knows its ids mean nothing here
      // (a restarted in-memory server counts from 1 again).
      'X-Kopek-Database-Id': identity.id,
      'X-Kopek-Database-Created': new Date(identity.created_at).toISOString(),
      'X-Kopek-Stream-After': String(after ?? issued),
    });
    const client = new Client(res, auth.shopId, auth.mode, auth.keyId, auth.scopes, after ?? issued, this, format);
    const key = `${auth.shopId}:${auth.mode}`;
    let set = this.byKey.get(key);
    if (!set) this.byKey.set(key, (set = new Set()));
    // The hub listens only while a stream is open (before the replay reads): a commit with none calls nothing here.
    this.unsubscribe ??= this.deps.events.subscribeStream(this.dispatch);
    set.add(client);
    this.count++;
    this.keyChecks ??= setInterval(() => void this.checkKeys(), STREAM_LIMITS.key_check_ms).unref();
    res.on('close', () => client.close('client closed'));
    client.write(encodeSseComment('connected'));
    this.deps.log.debug('sse connected', { request_id: ctx.requestId, shop_id: auth.shopId, mode: auth.mode, after, format, clients: this.count });
    this.replay(client).catch((err: unknown) => {
      this.deps.log.error('sse replay failed', { request_id: ctx.requestId, error: String((err as Error)?.message ?? err) });
      client.close('slow: replay failed');
    });
  }

  drop(client: Client, reason: string): void {
    const key = `${client.shopId}:${client.mode}`;
    const set = this.byKey.get(key);
    if (!set?.delete(client)) return;
    this.count--;
    this.deps.events.unfollowStream();
    if (set.size === 0) this.byKey.delete(key);
    if (this.count === 0) {
      this.unsubscribe?.();
      this.unsubscribe = null;
      if (this.keyChecks) clearInterval(this.keyChecks);
      this.keyChecks = null;
    }
    this.deps.log.debug('sse closed', { shop_id: client.shopId, mode: client.mode, reason, clients: this.count });
  }

  /** The last client's drop stops listening and checking keys. */
  stop(): void {
    if (this.pingTimer) clearInterval(this.pingTimer);
    this.pingTimer = null;
    for (const set of [...this.byKey.values()]) for (const c of [...set]) c.close('server shutting down');
  }

  private async replay(client: Client): Promise<void> {
    for (;;) {
      if (client.closed) return;
      client.missed = false;
      // In stream order: on SQLite a position is the seq (one writer: seq order is commit order); on PostgreSQL the
      // numbering pass's position (postgres/events.ts), returned as `seq`.
      const rows = await this.deps.store.all<EventRow>(streamEventsSql(this.deps.store), client.shopId, client.mode, client.lastSent, STREAM_LIMITS.replay_page);
      if (client.closed) return;
      for (const row of rows) client.sendEvent(row);
      // A short read during which nothing of this shop and mode was dispatched saw everything committed so far, and
      // later commits reach the client live; otherwise read again.
      if (rows.length < STREAM_LIMITS.replay_page && !client.missed) {
        client.live = true;
        return;
      }
      // One page in the buffer at a time.
      if (rows.length === STREAM_LIMITS.replay_page && client.res.writableLength > 0) await drained(client.res);
    }
  }

  /** Bound: it is the stream's listener. */
  private readonly dispatch = (row: EventRow): void => {
    const set = this.byKey.get(`${row.shop_id}:${row.mode}`);
    if (!set) return;
    for (const c of [...set]) {
      if (c.live) c.sendEvent(row);
      else c.missed = true;
    }
  };

  /** A revoked key's streams end; a key's scopes apply as they are now. One check at a time; a failed one is logged. */
  private async checkKeys(): Promise<void> {
    if (this.checking) return;
    this.checking = true;
    const standing = new Map<string, Awaited<ReturnType<typeof keyStanding>>>();
    try {
      for (const c of [...this.byKey.values()].flatMap((set) => [...set])) {
        let st = standing.get(c.keyId);
        if (!st) standing.set(c.keyId, (st = await keyStanding(this.deps.store, c.keyId)));
        if (st.revoked) c.close('key revoked');
        else c.scopes = st.scopes;
      }
    } catch (err) {
      this.deps.log.error('sse key check failed', { error: String((err as Error)?.message ?? err) });
    } finally {
      this.checking = false;
    }
  }

  private ping(): void {
    const text = encodeSseComment('ping');
    for (const set of [...this.byKey.values()]) for (const c of [...set]) c.write(text);
  }
}

function drained(res: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
  });
}

/** GET /v1/public/events: with Last-Event-ID, replayed after it first; `?format=webhook` sends webhook bodies. */
export async function streamEvents(ctx: Ctx<{ readonly stream: EventStreamHub }>): Promise<Reply> {
  const raw = ctx.query.get('format');
  if (raw !== null && raw !== 'events' && raw !== 'webhook') {
    throw badRequest(`Cannot open the event stream: format must be "events" or "webhook", got "${raw.slice(0, 64)}"`, 'format');
  }
  const header = ctx.req.headers['last-event-id'];
  const last = (Array.isArray(header) ? header[0] : header)?.trim();
  let after: number | null = null;
  if (last !== undefined && last !== '') {
    if (!/^\d{1,15}$/.test(last)) throw badRequest(`Cannot resume the event stream: Last-Event-ID must be an event sequence number, got "${last.slice(0, 64)}"`, 'Last-Event-ID');
    after = Number(last);
  }
  await ctx.app.stream.open(ctx, after, raw === 'webhook' ? 'webhook' : 'events');
  return { raw: true };
}
