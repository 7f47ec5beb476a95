import type { Engine, Reader, Store } from '../../platform/storage/store';

/** Failed sign-ins of one email allowed at full speed; after these each attempt must wait (see delayAfter). */
export const SLOW_AFTER_FAILURES = 3;
const LOCK_AFTER_FAILURES = 10;
/** A client address is allowed this many times more failures than one email (one office, many users). */
const IP_FACTOR = 5;
/** How long a lock lasts, and how long failures are remembered after the last one. */
export const LOCK_MS = 15 * 60_000;
const MAX_DELAY_MS = 60_000;

// Every password check first reserves an attempt: one conditional upsert per subject (email, client address) counts a failure
// in advance and sets `locked_until`; the database decides, so a burst on any number of nodes gets no more checks.

/** The counters an attempt is charged to, with how many times the email's limits each is allowed. */
function subjects(email: string, ip: string): Array<{ subject: string; factor: number }> {
  return [
    { subject: `email:${email.trim().toLowerCase()}`, factor: 1 },
    { subject: `ip:${ip}`, factor: IP_FACTOR },
  ];
}

/** The wait after `failures` failed attempts: none up to SLOW_AFTER, then 1 s, 2 s, 4 s … up to a minute. */
function delayAfter(failures: number, factor: number): number {
  const over = failures - SLOW_AFTER_FAILURES * factor;
  return over < 0 ? 0 : Math.min(MAX_DELAY_MS, 1000 * 2 ** Math.min(over, 16));
}

// The upsert reserving one attempt (params: subject, now; a first failure is below SLOW_AFTER_FAILURES, so never waits). `f`
// is the counter after this attempt (restarting once the last failure is LOCK_MS old); the WHERE refuses while an earlier
// reservation said to wait. SQLite's two-argument min() is LEAST() in PostgreSQL.
function reserveSql(engine: Engine, factor: number): string {
  const least = { sqlite: 'min', postgres: 'LEAST' }[engine];
  const now = 'excluded.last_failed_at';
  const f = `(CASE WHEN ${now} - cabinet_login_failures.last_failed_at >= ${LOCK_MS} THEN 1 ELSE cabinet_login_failures.failures + 1 END)`;
  const slow = SLOW_AFTER_FAILURES * factor;
  const next = `(CASE WHEN ${f} >= ${LOCK_AFTER_FAILURES * factor} THEN ${now} + ${LOCK_MS} WHEN ${f} >= ${slow} THEN ${now} + ${least}(${MAX_DELAY_MS}, 1000 * (CAST(1 AS BIGINT) << CAST(${least}(${f} - ${slow}, 16) AS INTEGER))) ELSE NULL END)`;
  return `INSERT INTO cabinet_login_failures (subject, failures, last_failed_at, locked_until) VALUES (?, 1, ?, NULL)
ON CONFLICT (subject) DO UPDATE SET failures = ${f}, last_failed_at = ${now}, locked_until = ${next}
WHERE cabinet_login_failures.locked_until IS NULL OR cabinet_login_failures.locked_until <= ${now}`;
}

/** A reservation refused: rolls back what the transaction reserved before it. */
class Refused extends Error {}

// Reserves one password check for this email from this address (a failure until `attemptSucceeded`); refused while either
// must wait. Gives `ok`, else the ms to wait; `locks`: this attempt, should it fail, locks the email.
export async function reserveAttempt(store: Store, email: string, ip: string, now: number): Promise<{ ok: boolean; wait_ms: number; locks: boolean }> {
  try {
    const failures = await store.write(async (tx) => {
      // Failures older than the lock are forgotten anyway: dropping them keeps the table to the last 15 minutes.
      await tx.run('DELETE FROM cabinet_login_failures WHERE last_failed_at <= ? AND (locked_until IS NULL OR locked_until <= ?)', now - LOCK_MS, now);
      let emailFailures = 0;
      for (const { subject, factor } of subjects(email, ip)) {
        if ((await tx.run(reserveSql(tx.engine, factor), subject, now)).changes === 0) throw new Refused();
        if (factor === 1) emailFailures = (await tx.get<{ failures: number }>('SELECT failures FROM cabinet_login_failures WHERE subject = ?', subject))!.failures;
      }
      return emailFailures;
    });
    return { ok: true, wait_ms: 0, locks: failures === LOCK_AFTER_FAILURES };
  } catch (err) {
    if (!(err instanceof Refused)) throw err;
    return { ok: false, wait_ms: Math.max(1, await signInWait(store, email, ip, now)), locks: false };
  }
}

/** An attempt whose password (and code) was right: the email's failures are forgotten, the address gets its reservation back. */
async function attemptSucceeded(store: Store, email: string, ip: string): Promise<void> {
  const [mail, addr] = subjects(email, ip);
  await store.write(async (tx) => {
    await tx.run('DELETE FROM cabinet_login_failures WHERE subject = ?', mail.subject);
    const giveBack = {
      sqlite: 'UPDATE cabinet_login_failures SET failures = max(failures - 1, 0) WHERE subject = ?',
      postgres: 'UPDATE cabinet_login_failures SET failures = GREATEST(failures - 1, 0) WHERE subject = ?',
    };
    await tx.run(giveBack[tx.engine], addr.subject);
  });
}

/** Milliseconds until a password check for this email from this address may be tried, or 0 when it may now. */
export async function signInWait(q: Reader, email: string, ip: string, now: number): Promise<number> {
  let wait = 0;
  for (const { subject, factor } of subjects(email, ip)) {
    const sql = 'SELECT failures, last_failed_at, locked_until FROM cabinet_login_failures WHERE subject = ?';
    const row = await q.get<{ failures: number; last_failed_at: number; locked_until: number | null }>(sql, subject);
    if (!row) continue;
    if (row.locked_until !== null) wait = Math.max(wait, row.locked_until - now);
    else if (now - row.last_failed_at < LOCK_MS) wait = Math.max(wait, row.last_failed_at + delayAfter(row.failures, factor) - now);
  }
  return Math.max(0, wait);
}

/** How a throttled check ended: refused before any check (wait), failed (and whether that locked the email), or passed. */
export type CheckOutcome = { kind: 'refused'; wait_ms: number } | { kind: 'failed'; locked: boolean } | { kind: 'passed' };

/** Runs `check` (password, TOTP...) under the email's sign-in throttle, reserved before the slow hash; sign-in and in-session checks share it. */
export async function throttledCheck(store: Store, o: { email: string; ip: string; now: number }, check: () => Promise<boolean>): Promise<CheckOutcome> {
  const attempt = await reserveAttempt(store, o.email, o.ip, o.now);
  if (!attempt.ok) return { kind: 'refused', wait_ms: attempt.wait_ms };
  if (!(await check())) return { kind: 'failed', locked: attempt.locks };
  await attemptSucceeded(store, o.email, o.ip);
  return { kind: 'passed' };
}
