import type { Store } from '../../platform/storage/store';
import { attemptSucceeded, reserveAttempt } from './throttle';

/** How a throttled check ended: refused before any check (wait), failed (and whether that locked the email), or passed. */
export type CheckOutcome = { kind: 'refused'; wait_ms: number } | { kind: 'failed'; locked: boolean } | { kind: 'passed' };

/**
 * Check a password (and whatever else `check` asks, a TOTP code say) under the sign-in throttle of `email`: the
 * attempt is reserved in the database before `check` runs its slow hash, so simultaneous requests get no more
 * checks than the throttle allows; a pass gives the reservation back. Sign-in and the checks inside a session
 * (changing the password, turning TOTP off) share the email's counter.
 */
export async function throttledCheck(store: Store, o: { email: string; ip: string; now: number }, check: () => Promise<boolean>): Promise<CheckOutcome> {
  const attempt = await reserveAttempt(store, o.email, o.ip, o.now);
  if (!attempt.ok) return { kind: 'refused', wait_ms: attempt.wait_ms };
  if (!(await check())) return { kind: 'failed', locked: attempt.locks };
  await attemptSucceeded(store, o.email, o.ip);
  return { kind: 'passed' };
}
