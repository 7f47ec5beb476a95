import type { ChangeSignal, WatchSpec } from '../change-signal';

/**
 * The change signal on PostgreSQL, where any node (or an admin command) may commit at any time.
 *
 * A few tables are rarely written and read by every request: the key, its shop and merchant, and the shop's
 * bank connections. Statement-level triggers on them send NOTIFY kopek_changes with the table's name, delivered
 * to every node's LISTEN connection when the writing transaction commits. A cache built from those tables drops
 * its entries on the notification, so a change made through any node is seen by the others within the delivery
 * of one notification (milliseconds; the contract allows a revoked key 1 s).
 *
 * The signal is only trusted while it can be heard: until the LISTEN connection has subscribed, and from the
 * moment it is lost until it has subscribed again, every check reports a change made elsewhere, so caches hold
 * nothing. The reconnect itself reports one too (what was missed meanwhile is unknown). And whatever the
 * connection says, an entry lives at most CHANGE_LIMITS.max_age_ms: a connection that died without a word (a
 * lost network with no reset) cannot keep a revoked key alive past that.
 *
 * Busy tables (payments, refunds) announce nothing: a NOTIFY serialises the commits of every transaction that
 * sends one, which is a price only rare writes can pay. A watch on a table, an operation or a column that is
 * not announced returns false, and its cache stays off.
 */

/** Bounds of the signal. */
export const CHANGE_LIMITS = {
  /** Longest an entry built from announced tables is trusted, whatever the LISTEN connection says. */
  max_age_ms: 500,
};

/** The channel the triggers notify on; the payload is the table's name. */
export const CHANGES_CHANNEL = 'kopek_changes';

/** What each announced table announces: every insert and delete, and updates of these columns (null: all). */
const ANNOUNCED: ReadonlyMap<string, readonly string[] | null> = new Map([
  ['api_keys', null],
  ['shops', ['id', 'merchant_id', 'name', 'scopes', 'ip_allowlist', 'signing_secret', 'require_signature']],
  ['merchants', ['id', 'live_enabled']],
  ['shop_acquirers', null],
  ['shop_payout_providers', null],
]);

function triggerSql(table: string, columns: readonly string[] | null): string {
  const update = columns === null ? 'UPDATE' : `UPDATE OF ${columns.join(', ')}`;
  return `CREATE OR REPLACE TRIGGER ${table}_announce AFTER INSERT OR DELETE OR ${update} ON ${table}
  FOR EACH STATEMENT EXECUTE FUNCTION kopek_announce_change();\n`;
}

/** The function and triggers that announce changes; every statement may run again (an upgrade runs it all). */
export const PG_CHANGE_SCHEMA = `
CREATE OR REPLACE FUNCTION kopek_announce_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('${CHANGES_CHANNEL}', TG_TABLE_NAME);
  RETURN NULL;
END $$;
${[...ANNOUNCED].map(([t, c]) => triggerSql(t, c)).join('')}`;

/** True when the announcements cover every change `spec` describes. */
function covered(spec: WatchSpec): boolean {
  if (!ANNOUNCED.has(spec.table)) return false;
  const cols = ANNOUNCED.get(spec.table)!;
  if (spec.on !== 'UPDATE' || cols === null) return true;
  if (spec.columns === undefined) return false;
  return spec.columns.every((c) => cols.includes(c));
}

/** The LISTEN side a signal needs: notifications on its channel, and whether they can be heard right now. */
export interface ChannelSource {
  addChannel(channel: string, handler: { notify(payload: string): void; state(up: boolean): void }): void;
}

export class PgChangeSignal implements ChangeSignal {
  private readonly byTable = new Map<string, Array<(key: unknown) => void>>();
  private readonly elsewhere: Array<() => void> = [];
  private up = false;
  private lastReset = 0;

  constructor(source: ChannelSource, private readonly clock: () => number = Date.now) {
    source.addChannel(CHANGES_CHANNEL, {
      notify: (table) => {
        for (const fn of this.byTable.get(table) ?? []) fn(undefined);
      },
      state: (up) => {
        this.up = up;
        this.reset();
      },
    });
  }

  /** Watch `specs`; false (and nothing watched) when any of them is not announced: that cache must stay off. */
  watch(_name: string, specs: readonly WatchSpec[], fn: (key: unknown) => void): boolean {
    if (!specs.every(covered)) return false;
    for (const table of new Set(specs.map((s) => s.table))) {
      const list = this.byTable.get(table) ?? [];
      list.push(fn);
      this.byTable.set(table, list);
    }
    return true;
  }

  /**
   * After a commit of this node's own: the tables it wrote. Their watchers hear it before the commit's answer
   * leaves, as on SQLite, instead of at the announcement's delivery a moment later.
   */
  committed(tables: ReadonlySet<string>): void {
    for (const t of tables) if (ANNOUNCED.has(t)) for (const fn of this.byTable.get(t) ?? []) fn(undefined);
  }

  onCommitElsewhere(fn: () => void): void {
    this.elsewhere.push(fn);
  }

  /** Before using a cache: unheard (or too old) means anything may have changed. */
  check(): void {
    if (!this.up || this.clock() - this.lastReset >= CHANGE_LIMITS.max_age_ms) this.reset();
  }

  private reset(): void {
    this.lastReset = this.clock();
    for (const fn of this.elsewhere) fn();
  }
}
