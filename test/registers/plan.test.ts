import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openDatabase, SCHEMA_VERSION } from '../../src/platform/storage/sqlite/open';
import { registerSeeks, REGISTERS, REGISTER_SEEKS_MAX, type RegisterTable } from '../../src/money/registers/plan';
import type { RegisterQuery } from '../../src/money/registers/query';
import { upgradeOldSqlite } from '../../src/platform/storage/sqlite/migrations-old';

const dir = mkdtempSync(join(tmpdir(), 'kopek-plan-'));
test.after(() => rmSync(dir, { recursive: true, force: true }));
const db = openDatabase(join(dir, 'plan.db'));
test.after(() => db.close());

/** The documented filters of each register beyond status: a column and a value it may hold. */
const EXTRA: Record<keyof typeof REGISTERS, Array<[string, string]>> = {
  payments: [],
  refunds: [],
  payouts: [['method', 'payouts_card']],
  tokens: [['customer_ref', 'cust-1']],
  subscriptions: [['customer_ref', 'cust-1']],
};

function query(o: { cursor: boolean; from: boolean; to: boolean }): RegisterQuery {
  return {
    limit: 50,
    after: o.cursor ? { createdAt: 1_700_000_000_000, seq: 12345, high: 99999 } : null,
    statuses: null,
    fromMs: o.from ? 1_600_000_000_000 : null,
    toMs: o.to ? 1_800_000_000_000 : null,
    extra: {},
  };
}

/** Every combination of the documented filters of a register, with and without a cursor and a day range. */
function* shapes(name: keyof typeof REGISTERS, spec: RegisterTable) {
  const statusChoices = [undefined, [spec.domains.status[0]], spec.domains.status.slice(0, 2)];
  const extras = EXTRA[name];
  for (let mask = 0; mask < 1 << extras.length; mask++) {
    for (const status of statusChoices) {
      const filters: Record<string, string[] | undefined> = { status };
      extras.forEach(([c, v], k) => (filters[c] = mask & (1 << k) ? [v] : undefined));
      for (const modes of name === 'payments' ? [['test'], ['live', 'test']] : [['test']]) {
        for (let r = 0; r < 8; r++) yield { filters, modes, rq: query({ cursor: !!(r & 1), from: !!(r & 2), to: !!(r & 4) }) };
      }
    }
  }
}

for (const name of Object.keys(REGISTERS) as Array<keyof typeof REGISTERS>) {
  test(`every filter of the ${name} register is one index seek in page order, never a scan or a sort`, () => {
    const spec: RegisterTable = REGISTERS[name];
    let checked = 0;
    for (const { filters, modes, rq } of shapes(name, spec)) {
      const seeks = registerSeeks(spec, 'shop-1', modes, filters, rq);
      assert.ok(seeks.length >= 1 && seeks.length <= REGISTER_SEEKS_MAX);
      const fixed = Object.keys(filters).filter((c) => filters[c] !== undefined);
      for (const seek of seeks) {
        const plan = (db.prepare(`EXPLAIN QUERY PLAN ${seek.sql.sqlite}`).all(...seek.params) as Array<{ detail: string }>).map((r) => r.detail);
        const what = `${name} ${JSON.stringify(filters)} modes=${modes} cursor=${!!rq.after} from=${rq.fromMs !== null} to=${rq.toMs !== null}: ${plan.join(' | ')}`;
        assert.equal(plan.length, 1, what);
        const ix = spec.filtered.find((f) => f.index === seek.index);
        const eq = ['shop_id=?', 'mode=?', ...(ix ? ix.columns.map((c) => `${c}=?`) : [])].join(' AND ');
        assert.ok(plan[0].startsWith(`SEARCH ${spec.table} USING INDEX ${seek.index} (${eq}`), what);
        for (const c of fixed) assert.ok(ix?.columns.includes(c), `${what}: ${c} is not served by the index`);
        // The cursor, `to` and `from` bound the seek itself, not a filter applied to rows walked past.
        if (rq.after || rq.toMs !== null) assert.match(plan[0], /created_at<\?/, what);
        if (rq.fromMs !== null) assert.match(plan[0], /created_at>\?/, what);
        assert.doesNotMatch(plan[0], /TEMP B-TREE/, what);
        checked++;
      }
    }
    assert.ok(checked > 0);
  });
}

test('a database of schema version 4 gains the register indexes, and its rows page through them', () => {
  const path = join(dir, 'v4.db');
  const old = openDatabase(path);
  // As version 4 left it: the payment register without mode, a customer index without status, no status indexes.
  old.exec(`DROP INDEX payments_register; CREATE INDEX payments_register ON payments(shop_id, created_at, seq);
    DROP INDEX payments_status; DROP INDEX refunds_status; DROP INDEX payouts_method_status; DROP INDEX tokens_status;
    DROP INDEX tokens_customer; CREATE INDEX tokens_customer ON tokens(shop_id, mode, customer_ref, created_at, seq);
    DROP INDEX subscriptions_status; DROP INDEX subscriptions_customer;`);
  old.pragma('user_version = 4');
  old.close();
  upgradeOldSqlite(path);
  const db2 = openDatabase(path);
  try {
    assert.equal(db2.pragma('user_version', { simple: true }), SCHEMA_VERSION);
    const cols = (ix: string) => (db2.prepare(`PRAGMA index_info(${ix})`).all() as Array<{ name: string }>).map((r) => r.name).join(',');
    assert.equal(cols('payments_register'), 'shop_id,mode,created_at,seq');
    assert.equal(cols('payments_status'), 'shop_id,mode,status,created_at,seq');
    assert.equal(cols('tokens_customer'), 'shop_id,mode,customer_ref,status,created_at,seq');
    assert.equal(cols('subscriptions_customer'), 'shop_id,mode,customer_ref,status,created_at,seq');
    assert.equal(cols('payouts_method_status'), 'shop_id,mode,method,status,created_at,seq');
  } finally {
    db2.close();
  }
});
