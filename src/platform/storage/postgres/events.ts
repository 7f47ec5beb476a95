import pg from 'pg';
import type { Logger } from '../../log';
import type { Row } from '../tx';
import type { EventFeed } from '../store';

/**
 * The event stream's order on PostgreSQL. events.seq is handed out at insert, not at commit, so a reader that
 * saw seq 11 may later see seq 10 commit: a stream following seq would skip 10 for good.
 *
 * So a trigger queues each committed event's seq in `event_queue`, and a numbering pass moves the queue into
 * `event_positions` (next `event_pos` number, in seq order) in its own transaction holding an advisory lock to
 * its COMMIT: passes run one at a time across nodes, each numbers only events committed before it began, so a
 * position is visible only once every smaller one is. Appends take no lock. The queue has no foreign key: checking
 * it would make concurrent appends SERIALIZABLE conflicts; a queued seq whose event is gone is just dropped.
 *
 * Every node runs a pass after its own appending commits (kick) and on a timer (for a dead node's events). A pass
 * that numbered anything NOTIFYs kopek_events at its commit; LISTEN is only a wake-up, the table is read after
 * every notification, reconnect and tick. The same connection hears kopek_changes: see keyTablesVersion.
 */

/** The migration lock's number ("kopek" in ASCII) plus one. */
const NUMBERING_LOCK = 0x6b6f70656b + 1;
const CHANNEL = 'kopek_events';
const CHANGES_CHANNEL = 'kopek_changes';
export const EVENT_FEED_LIMITS = {
  /** Every node numbers and reads on this period even with no wake-up (a dead node's events, a lost notification). */
  tick_ms: 500,
  /**
   * A kicked pass (and each further pass of a run of kicks) waits this long first, so one pass numbers every
   * commit of those milliseconds: back-to-back passes, each a COMMIT and a NOTIFY waking every node, had cost
   * about a tenth of a create's CPU. Events reach the streams this much later.
   */
  kick_delay_ms: 20,
  /** Longest a key cache's entry is trusted (see keyTablesVersion). */
  key_cache_max_age_ms: 500,
  page: 500,
  /** First pause before reconnecting the LISTEN connection; doubles up to max. */
  reconnect_first_ms: 100,
  reconnect_max_ms: 5_000,
};

/**
 * A numbering pass; its fifth result holds how many events it numbered. The planner guessed thousands of rows
 * from the queue's DELETE and hashed the whole events table every pass, so the joins are forced to probe the key.
 */
const PASS_SQL = `BEGIN ISOLATION LEVEL READ COMMITTED;
SET LOCAL enable_hashjoin = off;
SET LOCAL enable_mergejoin = off;
SELECT pg_advisory_xact_lock(${NUMBERING_LOCK});
WITH q AS (DELETE FROM event_queue RETURNING seq),
numbered AS (
  INSERT INTO event_positions (pos, seq, shop_id, mode)
  SELECT nextval('event_pos'), s.seq, s.shop_id, s.mode
    FROM (SELECT e.seq, e.shop_id, e.mode FROM q JOIN events e ON e.seq = q.seq ORDER BY e.seq) AS s
  RETURNING pos
)
SELECT n, CASE WHEN n > 0 THEN pg_notify('${CHANNEL}', '') END AS notified FROM (SELECT count(*) AS n FROM numbered) AS c;
COMMIT`;

const PASS_RESULT = 4;

/** `seq` is the stream position. */
const STREAM_COLUMNS = `p.pos AS seq, e.id, e.merchant_id, e.shop_id, e.mode, e.kind, e.payload, e.at, e.webhook_event, e.webhook_data,
  e.webhook_url, e.payment_id, e.payout_id`;

/** A shop's events of a mode after stream position `after`, in stream order. */
export const PG_EVENTS_AFTER_SQL = `SELECT ${STREAM_COLUMNS} FROM event_positions p JOIN events e ON e.seq = p.seq
  WHERE p.shop_id = ? AND p.mode = ? AND p.pos > ? ORDER BY p.pos LIMIT ?`;

/** 0 before the first. */
export const PG_LAST_POSITION_SQL = `SELECT coalesce(max(pos), 0) AS seq FROM event_positions`;

const ALL_AFTER_SQL = `SELECT ${STREAM_COLUMNS} FROM event_positions p JOIN events e ON e.seq = p.seq
  WHERE p.pos > $1 ORDER BY p.pos LIMIT $2`;

/** The PostgreSQL event feed of one node: numbering passes, the follower and its LISTEN connection. */
export class PgEventFeed implements EventFeed {
  private readonly listeners = new Set<(row: Row) => void>();
  private numbering: Promise<void> | null = null;
  private numberAgain = false;
  private reading: Promise<void> | null = null;
  private readAgain = false;
  /** The last position handed to listeners; null until the first read after someone subscribed. */
  private watermark: number | null = null;
  private timer: NodeJS.Timeout | null = null;
  private listener: pg.Client | null = null;
  private reconnectMs = EVENT_FEED_LIMITS.reconnect_first_ms;
  private stopped = true;
  /** Streams of this node that follow the feed; none: no read at all (a node without streams pays nothing). */
  private following = 0;
  private ready: Promise<void> | null = null;
  /** See keyTablesVersion: the number, when it last moved, and whether kopek_changes is heard now. */
  private keyVersion = 0;
  private keyMovedAt = 0;
  private hearingChanges = false;

  constructor(
    private readonly pool: pg.Pool,
    private readonly connect: () => pg.Client,
    private readonly log: Logger,
  ) {}

  /**
   * Store.keyTablesVersion on PostgreSQL. It moves at every kopek_changes announcement (sent at the writing
   * commit; the contract allows a revoked key 1 s), at this node's own key-table commits (keyTablesChanged,
   * before the answer leaves) and at every LISTEN (re)connect. While that connection is down it moves at every
   * call, and in any case after key_cache_max_age_ms, so a silently dead connection cannot keep a revoked key.
   * Busy tables (payments, refunds) announce nothing: a NOTIFY serialises the commits of its senders.
   */
  keyTablesVersion(): number {
    if (!this.hearingChanges || Date.now() - this.keyMovedAt >= EVENT_FEED_LIMITS.key_cache_max_age_ms) this.keyTablesChanged();
    return this.keyVersion;
  }

  keyTablesChanged(): void {
    this.keyVersion++;
    this.keyMovedAt = Date.now();
  }

  subscribe(fn: (row: Row) => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  async follow(): Promise<void> {
    this.following++;
    if (this.following === 1 || this.ready === null) {
      this.watermark = null;
      // Only this read may set the watermark, not one left over from an earlier first stream.
      const ready: Promise<void> = this.pool.query(PG_LAST_POSITION_SQL).then((r) => {
        if (this.ready === ready) this.watermark ??= Number(r.rows[0].seq);
      });
      this.ready = ready;
    }
    try {
      await this.ready;
    } catch (err) {
      this.ready = null;
      this.unfollow();
      throw err;
    }
  }

  unfollow(): void {
    this.following = Math.max(0, this.following - 1);
    if (this.following === 0) {
      this.watermark = null;
      this.ready = null;
    }
  }

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.timer = setInterval(() => {
      this.kick();
      this.wake();
    }, EVENT_FEED_LIMITS.tick_ms).unref();
    void this.listen();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    const l = this.listener;
    this.listener = null;
    await l?.end().catch(() => {});
    await this.numbering?.catch(() => {});
    await this.reading?.catch(() => {});
  }

  kick(): void {
    if (this.stopped) return;
    if (this.numbering) {
      this.numberAgain = true;
      return;
    }
    this.numbering = (async () => {
      do {
        await new Promise((r) => setTimeout(r, EVENT_FEED_LIMITS.kick_delay_ms));
        this.numberAgain = false;
        const n = await this.numberPass();
        if (n > 0) this.wake();
      } while (this.numberAgain && !this.stopped);
    })()
      .catch((err) => this.log.warn('cannot number events now; the next pass will', { error: String((err as Error).message ?? err) }))
      .finally(() => (this.numbering = null));
  }

  /**
   * One round trip: the transaction is one text of statements. Read committed gives each statement its own
   * snapshot, so the numbering one, taken once the lock is ours, sees every event committed before the last pass.
   */
  private async numberPass(): Promise<number> {
    const c = await this.pool.connect();
    let broken = false;
    try {
      const results = (await c.query(PASS_SQL)) as unknown as pg.QueryResult[];
      return Number(results[PASS_RESULT].rows[0]?.n ?? 0);
    } catch (err) {
      await c.query('ROLLBACK').catch(() => (broken = true));
      throw err;
    } finally {
      c.release(broken ? true : undefined);
    }
  }

  /** Coalesced with a read already running. */
  private wake(): void {
    if (this.stopped || this.following === 0 || this.listeners.size === 0) return;
    if (this.reading) {
      this.readAgain = true;
      return;
    }
    this.reading = (async () => {
      do {
        this.readAgain = false;
        await this.readPass();
      } while (this.readAgain && !this.stopped && this.following > 0);
    })()
      .catch((err) => this.log.warn('cannot read new events now; the next tick will', { error: String((err as Error).message ?? err) }))
      .finally(() => (this.reading = null));
  }

  private async readPass(): Promise<void> {
    // Listeners replay the past from the table; the feed carries what is numbered after the first follow().
    for (;;) {
      if (this.watermark === null) return;
      const r: pg.QueryResult = await this.pool.query(ALL_AFTER_SQL, [this.watermark, EVENT_FEED_LIMITS.page]);
      for (const row of r.rows as Row[]) {
        if (this.watermark === null) return;
        this.watermark = Number(row.seq);
        for (const fn of this.listeners) fn(row);
      }
      if (r.rows.length < EVENT_FEED_LIMITS.page) return;
    }
  }

  /** After every (re)connect, read the table again (a notification may be lost). */
  private async listen(): Promise<void> {
    if (this.stopped) return;
    const client = this.connect();
    client.on('notification', (msg) => {
      if (msg.channel === CHANGES_CHANNEL) this.keyTablesChanged();
      else this.wake();
    });
    client.on('error', () => {});
    client.on('end', () => {
      this.hearingChanges = false;
      if (this.listener !== client || this.stopped) return;
      this.listener = null;
      const wait = this.reconnectMs;
      this.reconnectMs = Math.min(this.reconnectMs * 2, EVENT_FEED_LIMITS.reconnect_max_ms);
      setTimeout(() => void this.listen(), wait).unref();
    });
    this.listener = client;
    try {
      await client.connect();
      await client.query(`LISTEN ${CHANNEL}`);
      await client.query(`LISTEN ${CHANGES_CHANNEL}`);
      this.hearingChanges = true;
      this.keyTablesChanged();
      this.reconnectMs = EVENT_FEED_LIMITS.reconnect_first_ms;
      this.wake();
    } catch {
      // 'end' follows a failed connect and schedules the next try.
      await client.end().catch(() => {});
    }
  }
}
