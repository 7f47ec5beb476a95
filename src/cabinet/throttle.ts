import type { Reader, Store } from '../db/store';

/** Failed sign-ins of one email allowed at full speed; after these each attempt must wait (see delayAfter). */
export const SLOW_AFTER_FAILURES = 3;
/** Failed sign-ins of one email that lock it. */
export const LOCK_AFTER_FAILURES = 10;
/** A client address is allowed this many times more failures than one email (one office, many users). */
const IP_FACTOR = 5;
/** How long a lock lasts, and how long failures are remembered after the last one. */
export const LOCK_MS = 15 * 60_000;
/** Longest wait between slowed attempts. */
const MAX_DELAY_MS = 60_000;

interface FailureRow {
  failures: number;
  last_failed_at: number;
  locked_until: number | null;
}

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

/** Milliseconds until a sign-in for this email from this address may be tried, or 0 when it may now. */
export async function signInWait(q: Reader, email: string, ip: string, now: number): Promise<number> {
  let wait = 0;
  for (const { subject, factor } of subjects(email, ip)) {
    const row = await q.get<FailureRow>('SELECT failures, last_failed_at, locked_until FROM cabinet_login_failures WHERE subject = ?', subject);
    if (!row || now - row.last_failed_at >= LOCK_MS) continue;
    if (row.locked_until !== null && row.locked_until > now) wait = Math.max(wait, row.locked_until - now);
    else wait = Math.max(wait, row.last_failed_at + delayAfter(row.failures, factor) - now);
  }
  return Math.max(0, wait);
}

/** Count a failed sign-in against the email and the address; returns true when it locked the email. */
export async function noteFailedSignIn(store: Store, email: string, ip: string, now: number): Promise<boolean> {
  let locked = false;
  await store.tx(async (tx) => {
    // Failures older than the lock are forgotten anyway: dropping them keeps the table to the last 15 minutes.
    await tx.run('DELETE FROM cabinet_login_failures WHERE last_failed_at <= ? AND (locked_until IS NULL OR locked_until <= ?)', now - LOCK_MS, now);
    for (const { subject, factor } of subjects(email, ip)) {
      const row = await tx.get<FailureRow>('SELECT failures, last_failed_at FROM cabinet_login_failures WHERE subject = ?', subject);
      const failures = row && now - row.last_failed_at < LOCK_MS ? row.failures + 1 : 1;
      const lock = failures >= LOCK_AFTER_FAILURES * factor ? now + LOCK_MS : null;
      if (lock !== null && factor === 1) locked = true;
      await tx.run(
        `INSERT INTO cabinet_login_failures (subject, failures, last_failed_at, locked_until) VALUES (?, ?, ?, ?)
         ON CONFLICT (subject) DO UPDATE SET failures = excluded.failures, last_failed_at = excluded.last_failed_at, locked_until = excluded.locked_until`,
        subject,
        failures,
        now,
        lock,
      );
    }
  });
  return locked;
}

/** Forget an email's failures after it signed in. */
export async function clearFailedSignIns(store: Store, email: string): Promise<void> {
  await store.tx((tx) => tx.run('DELETE FROM cabinet_login_failures WHERE subject = ?', `email:${email.trim().toLowerCase()}`));
}
