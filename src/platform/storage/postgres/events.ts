import pg from 'pg';
import type { Logger } from '../../log';
import type { Row } from '../tx';
import type { EventFeed } from '../store';

/**
 * The event stream's order on PostgreSQL. Events are inserted by any transaction on any node, each with a
 * number from the table's identity (events.seq); those numbers are handed out when a row is inserted, not when
 * its transaction commits, so a reader that saw seq 11 may later see seq 10 commit: a stream that sent 11 would
 * skip 10 for good (the sequence-gap trap).
 *
 * The queue has no foreign key on purpose: checking one reads the events index beside every other writer's new
 * entry, which SERIALIZABLE counts as a conflict between concurrent appends. A queued seq whose event was deleted
 * (retention, a test reset) is dropped by the next pass, which numbers only events it finds.
 *
 * Here the stream does not follow seq. A trigger queues each new event's seq in `event_queue` (in the inserting
 * transaction, so only committed events are ever queued). A numbering pass moves the queue into
 * `event_positions`, giving each event the next number of the `event_pos` sequence in seq order, in a transaction
 * of its own that holds an advisory lock until its COMMIT: passes run one after another across all nodes, and
 * each numbers only events whose transactions committed before it began. A position is therefore visible only
 * once every smaller position is, and the stream reads positions in order: no event is skipped and none is sent
 * twice, however late its writer commits, and no writer waits for another (appends take no lock).
 *
 * Any node runs a pass after its own commits that appended events (kick), and every node runs one on a timer,
 * which numbers events whose node died before its pass. A pass that numbered anything sends NOTIFY
 * kopek_events, delivered at its commit: the other nodes' streams read the new positions at once. LISTEN is only
 * a wake-up: a follower reads the table after every notification, every reconnect and every timer tick.
 * (The tables and the trigger are postgres/schema.sql's.)
 *
 * The same LISTEN connection hears kopek_changes, the announcements of changes to what API keys are resolved
 * from (schema.sql's last section): see keyTablesVersion.
 */

/** The advisory lock a numbering pass holds to its commit: the migration lock's number ("kopek" in ASCII) plus one. */
const NUMBERING_LOCK = 0x6b6f70656b + 1;

/** The channel a pass notifies once it numbered events; the one changes to the key tables are announced on. */
const CHANNEL = 'kopek_events';
const CHANGES_CHANNEL = 'kopek_changes';

/** Timing of the follower and the numbering passes. */
export const EVENT_FEED_LIMITS = {
  /** Every node numbers and reads on this period even with no wake-up (a dead node's events, a lost notification). */
  tick_ms: 500,
  /**
   * A kicked numbering pass waits this long first, and so does every further pass of the same run of kicks: one
   * pass numbers the events of every commit of those milliseconds. Under load a node thus runs at most one pass
   * per this period plus the pass's own time; each pass is a transaction of its own with a COMMIT and a NOTIFY
   * that wakes every listening node, and back-to-back passes had cost about a tenth of the CPU of a create. An
   * event reaches the streams this much later than its commit, plus the pass.
   */
  kick_delay_ms: 20,
  /** Longest a key cache's entry is trusted, whatever the LISTEN connection says (see keyTablesVersion). */
  key_cache_max_age_ms: 500,
  /** Positions read per query. */
  page: 500,
  /** First pause before reconnecting the LISTEN connection; doubles up to max. */
  reconnect_first_ms: 100,
  reconnect_max_ms: 5_000,
};

/**
 * A numbering pass: take the lock, move the queue into positions in seq order, notify when anything was numbered
 * (delivered at the commit), commit. Its fifth result holds how many events it numbered.
 *
 * The planner cannot know how many rows the queue's DELETE returns, and guessed thousands: it hashed the whole
 * events table on every pass, a cost that grew with the table. The pass joins by probing the events key instead.
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

/** The index of the numbering statement's result among PASS_SQL's results. */
const PASS_RESULT = 4;

/** The columns of an event as the stream reads it: `seq` is its stream position. */
const STREAM_COLUMNS = `p.pos AS seq, e.id, e.merchant_id, e.shop_id, e.mode, e.kind, e.payload, e.at, e.webhook_event, e.webhook_data,
  e.webhook_url, e.payment_id, e.payout_id`;

/** A shop's events of a mode after stream position `after`, in stream order (the stream's replay). */
export const PG_EVENTS_AFTER_SQL = `SELECT ${STREAM_COLUMNS} FROM event_positions p JOIN events e ON e.seq = p.seq
  WHERE p.shop_id = ? AND p.mode = ? AND p.pos > ? ORDER BY p.pos LIMIT ?`;

/** The last stream position given; 0 before the first. */
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
  /** Streams of this node that follow the feed; none: no read at all (a node under load without streams pays nothing). */
  private following = 0;
  /** The read of the starting watermark when the first stream began to follow. */
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
   * Store.keyTablesVersion on PostgreSQL, where any node (or an admin command) may commit at any time. It moves
   * at every announcement on kopek_changes (delivered at the writing commit, so a change made through any node
   * reaches the others within milliseconds; the contract allows a revoked key 1 s), at this node's own commits
   * that wrote a key table (keyTablesChanged: before the commit's answer leaves), and at every (re)connect of
   * the LISTEN connection (what was missed meanwhile is unknown). It is only trusted while announcements can be
   * heard: while that connection is down, it moves at every call, so a cache holds nothing; and whatever the
   * connection says, it moves after key_cache_max_age_ms, so a connection that died without a word (a lost
   * network with no reset) cannot keep a revoked key alive past that.
   *
   * Busy tables (payments, refunds) announce nothing: a NOTIFY serialises the commits of every transaction that
   * sends one, which is a price only rare writes can pay.
   */
  keyTablesVersion(): number {
    if (!this.hearingChanges || Date.now() - this.keyMovedAt >= EVENT_FEED_LIMITS.key_cache_max_age_ms) this.keyTablesChanged();
    return this.keyVersion;
  }

  /** What key answers are read from may have changed: move keyTablesVersion. */
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
      // Only this read may set the watermark: one left over from an earlier first stream (all ended meanwhile)
      // would set an older one.
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
    }, EVENT_FEED_LIMITS.tick_ms);
    this.timer.unref();
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
      .finally(() => {
        this.numbering = null;
      });
  }

  /**
   * One numbering pass, in one round trip: the whole transaction is one text of statements (nothing in it is a
   * parameter). Read committed gives each statement its own snapshot, so the numbering statement's is taken
   * once the lock is ours and sees every event committed before the previous pass ended. Returns how many
   * events it numbered.
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

  /** Read new positions for the listeners (coalesced with a read already running). */
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
      .finally(() => {
        this.reading = null;
      });
  }

  private async readPass(): Promise<void> {
    // Listeners replay what came before from the table themselves; the feed carries what is numbered from the
    // moment the first stream followed (its starting read sets the watermark).
    if (this.watermark === null) return;
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

  /** Keep a LISTEN connection open; after every (re)connect, read the table again (a notification may be lost). */
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
