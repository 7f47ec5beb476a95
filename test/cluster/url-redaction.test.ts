import { test } from 'node:test';
import assert from 'node:assert/strict';
import { redactUrl } from '../../src/platform/redact-url';
import { createLogger } from '../../src/platform/log';
import { runCli } from '../helpers/cli';
import { spawnServer } from '../helpers/child-server';
import { dropPgDatabase, ensureMasterKey, freshPgDatabase, postgresOnly } from '../helpers/pg';
import { doRequest } from '../helpers/server';
import { openStorage } from '../../src/platform/storage/maintenance';
import { createDemo } from '../../src/money/shops/store';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

// A database URL carries its password. Wherever kopek shows such a URL (the serve banner, log lines, errors,
// doctor, --help, /healthz, /metrics) the password shows as ***.

const skip = postgresOnly();

/** The password of every URL below: nothing kopek prints may hold it. */
const SECRET = 'adminpw-4f9c';

/** `text` as a regular expression matching it literally. */
function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** `url` (postgres://user@host:port/db) with the password set in its user information. */
function withPassword(url: string, password = SECRET): string {
  return url.replace(/^postgres:\/\/([^@/]+)@/, `postgres://$1:${password}@`);
}

test('redactUrl hides the password of a postgres URL, in the user information or the query, alone or quoted in a text', () => {
  assert.equal(redactUrl(`postgres://kopek:${SECRET}@db.internal:5432/kopek`), 'postgres://kopek:***@db.internal:5432/kopek');
  assert.equal(redactUrl(`postgresql://kopek:${SECRET}@db/kopek?sslmode=require`), 'postgresql://kopek:***@db/kopek?sslmode=require');
  assert.equal(redactUrl(`POSTGRES://kopek:${SECRET}@db/kopek`), 'POSTGRES://kopek:***@db/kopek');
  // A password written with a bare @ or : in it is hidden whole.
  assert.equal(redactUrl('postgres://kopek:p@ss:w@db/kopek'), 'postgres://kopek:***@db/kopek');
  assert.equal(redactUrl(`postgres://kopek@db/kopek?sslmode=require&password=${SECRET}`), 'postgres://kopek@db/kopek?sslmode=require&password=***');
  assert.equal(redactUrl(`postgres://db/kopek?password=${SECRET}&sslpassword=${SECRET}`), 'postgres://db/kopek?password=***&sslpassword=***');
  // In a message: each URL, nothing around it.
  assert.equal(
    redactUrl(`cannot open database "postgres://a:${SECRET}@h/x": refused; also postgres://b:${SECRET}@h/y`),
    'cannot open database "postgres://a:***@h/x": refused; also postgres://b:***@h/y',
  );
  // Nothing to hide: the text comes back as it is.
  for (const same of ['postgres://kopek@db.internal/kopek', 'postgres://db.internal:5432/kopek', './data/kopek.db', 'https://user:pw@shop.example/hook']) {
    assert.equal(redactUrl(same), same);
  }
});

test('a log line that quotes a database URL, in its message or any field, shows *** for the password', () => {
  const lines: string[] = [];
  const log = createLogger('debug', (l) => void lines.push(l));
  log.warn(`cannot reach postgres://kopek:${SECRET}@db/kopek`, { error: `connect to postgres://kopek@db/kopek?password=${SECRET} failed`, nested: { url: `postgres://u:${SECRET}@h/d` }, n: 1 });
  log.info('request', { path: '/v1/public/payments', status: 201 });
  assert.equal(lines.length, 2);
  assert.ok(!lines[0].includes(SECRET), lines[0]);
  const line = JSON.parse(lines[0]);
  assert.equal(line.msg, 'cannot reach postgres://kopek:***@db/kopek');
  assert.equal(line.error, 'connect to postgres://kopek@db/kopek?password=*** failed');
  assert.deepEqual(line.nested, { url: 'postgres://u:***@h/d' });
  assert.equal(line.n, 1);
  assert.deepEqual(JSON.parse(lines[1]), { ...JSON.parse(lines[1]), msg: 'request', path: '/v1/public/payments', status: 201 });
});

test('errors and doctor findings that quote a database URL show *** for the password, and no --help shows it', async () => {
  const down = `postgres://kopek:${SECRET}@127.0.0.1:1/kopek`;
  const byQuery = `postgres://kopek@127.0.0.1:1/kopek?password=${SECRET}`;
  for (const url of [down, byQuery]) {
    const doctor = await runCli(['doctor', '--db', url, '--json']);
    assert.equal(doctor.code, 1);
    assert.ok(!(doctor.out + doctor.err).includes(SECRET), doctor.out);
    for (const argv of [['migrate', '--db', url], ['jobs', '--db', url], ['serve', '--ephemeral', '--db', url], ['webhook', 'list', '--shop', 'shop_x', '--db', url]]) {
      const r = await runCli(argv);
      assert.equal(r.code, 1, argv.join(' '));
      assert.ok(r.err.length > 0, argv.join(' '));
      assert.ok(!(r.out + r.err).includes(SECRET), `${argv[0]}: ${r.err}`);
    }
  }
  const ephemeral = await runCli(['serve', '--ephemeral', '--db', down]);
  assert.match(ephemeral.err, /cannot be used with --db "postgres:\/\/kopek:\*\*\*@127\.0\.0\.1:1\/kopek"/);
  const migrate = await runCli(['migrate', '--db', down]);
  assert.match(migrate.err, /postgres:\/\/kopek:\*\*\*@127\.0\.0\.1:1\/kopek/);

  const saved = process.env.KOPEK_DATABASE_URL;
  process.env.KOPEK_DATABASE_URL = down;
  try {
    const top = await runCli(['--help']);
    const names = [...top.out.matchAll(/^ {2}([a-z]+) {2,}/gm)].map((m) => m[1]);
    assert.ok(names.includes('serve') && names.includes('doctor') && names.includes('db'), top.out);
    for (const name of names) {
      const help = await runCli([name, '--help']);
      assert.equal(help.code, 0, name);
      assert.ok(!help.out.includes(SECRET), name);
    }
  } finally {
    if (saved === undefined) delete process.env.KOPEK_DATABASE_URL;
    else process.env.KOPEK_DATABASE_URL = saved;
  }
});

test('kopek serve on a postgres:// URL with a password: the listening line, every log line, /healthz and /metrics show *** for it', { skip }, async () => {
  ensureMasterKey();
  const db = await freshPgDatabase();
  const dir = mkdtempSync(join(tmpdir(), 'kopek-redact-'));
  try {
    // kopek db copy into it, and kopek doctor on it, name the database with *** for the password.
    const file = join(dir, 'kopek.db');
    const source = openStorage(file);
    await createDemo(source, Date.now());
    await source.close();
    const copy = await runCli(['db', 'copy', '--from', file, '--to', withPassword(db)]);
    assert.equal(copy.code, 0, copy.err);
    assert.match(copy.out, new RegExp(`into "${escape(withPassword(db, '***'))}";`));
    const again = await runCli(['db', 'copy', '--from', file, '--to', `${db}?password=${SECRET}`]);
    assert.match(again.err, /cannot copy into "postgres:\/\/.*\?password=\*\*\*": the target database is not empty/);
    const doctor = await runCli(['doctor', '--db', withPassword(db), '--json']);
    assert.equal(doctor.json.findings[0].detail, withPassword(db, '***'));
    for (const r of [copy, again, doctor]) assert.ok(!(r.out + r.err).includes(SECRET), r.out + r.err);

    // Once in the user information by --db, once as ?password= by KOPEK_DATABASE_URL.
    for (const [args, env, shown] of [
      [['--db', withPassword(db)], {}, withPassword(db, '***')],
      [[], { KOPEK_DATABASE_URL: `${db}?password=${SECRET}` }, `${db}?password=***`],
    ] as Array<[string[], NodeJS.ProcessEnv, string]>) {
      const child = await spawnServer([...args, '--ready-json', '--log-level', 'debug'], env);
      try {
        const banner = /^kopek \S+ listening on .*$/m.exec(child.stderr())![0];
        assert.ok(banner.endsWith(`(database ${shown})`), banner);
        const health = await doRequest(child.url, 'GET', '/healthz', { key: null }, '');
        assert.equal(health.status, 200);
        const metrics = await doRequest(child.url, 'GET', '/metrics', { key: null, noSchemaCheck: true }, '');
        assert.equal(metrics.status, 200);
        for (const r of [health, metrics]) assert.ok(!r.text.includes(SECRET) && !JSON.stringify(r.headers).includes(SECRET));
      } finally {
        child.proc.kill('SIGTERM');
        await child.exited;
      }
      // Everything it wrote, start to stop: the banner, the log lines (debug and up), the shutdown.
      assert.ok(child.stderr().includes('"level":"'), 'the logs were captured');
      assert.ok(!child.stderr().includes(SECRET), child.stderr());
    }
  } finally {
    await dropPgDatabase(db);
    rmSync(dir, { recursive: true, force: true });
  }
});
