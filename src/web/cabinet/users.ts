import { createHmac, randomBytes, scrypt, scryptSync, timingSafeEqual, type ScryptOptions } from 'node:crypto';
import { promisify } from 'node:util';
import type { Engine, Reader, Store } from '../../platform/storage/store';
import { uuid, sha256Hex } from '../../platform/util/ids';
import { seal, unseal } from '../../platform/secrets/at-rest';
import { getMerchant } from '../../money/shops/store';

/** scrypt cost: N = 2^15, r = 8, p = 1 (about 50 ms and 32 MiB per hash), OWASP's recommended minimum. */
const SCRYPT = { N: 1 << 15, r: 8, p: 1, maxmem: 64 * 1024 * 1024 } as const;
/** Length of the derived key and of the salt, in bytes. */
const KEY_BYTES = 32;
const SALT_BYTES = 16;
const PASSWORD_MIN = 10;
/** Longest password accepted: a longer one would only cost hashing time. */
const PASSWORD_MAX = 200;
/** Recovery codes issued when TOTP is turned on; each signs in once instead of a code. */
const RECOVERY_CODES = 10;

/** A cabinet user row (hashes and secrets included; never shown). */
export interface CabinetUser {
  id: string;
  merchant_id: string;
  email: string;
  password_hash: string;
  /** The confirmed TOTP secret, sealed under the master key (totpSecret reads it). */
  totp_secret: string | null;
  /** The secret offered during enrolment, sealed too (totpSecret reads it). */
  totp_pending: string | null;
  totp_last_step: number;
  created_at: number;
  disabled_at: number | null;
}

/** A password as stored: `scrypt$N$r$p$salt$key`, so the cost can be raised later without breaking old hashes. */
function hashPassword(password: string, action?: string): string {
  checkPassword(password, action);
  const salt = randomBytes(SALT_BYTES);
  const key = scryptSync(password, salt, KEY_BYTES, SCRYPT);
  return `scrypt$${SCRYPT.N}$${SCRYPT.r}$${SCRYPT.p}$${salt.toString('base64url')}$${key.toString('base64url')}`;
}

/** A hash of a random password, checked against when the email is unknown so both cases take as long. */
let decoyHash: string | null = null;

const scryptAsync = promisify(scrypt) as (password: string, salt: Buffer, keylen: number, options: ScryptOptions) => Promise<Buffer>;

/** True when `password` matches `stored` (scrypt runs on the thread pool, off the event loop). */
export async function verifyPassword(stored: string | null, password: string): Promise<boolean> {
  decoyHash ??= hashPassword(randomBytes(16).toString('hex'));
  const parts = (stored ?? decoyHash).split('$');
  if (parts.length !== 6 || parts[0] !== 'scrypt') return false;
  const [, n, r, p, salt, key] = parts;
  const expected = Buffer.from(key, 'base64url');
  const options = { N: Number(n), r: Number(r), p: Number(p), maxmem: SCRYPT.maxmem };
  const got = await scryptAsync(password.slice(0, PASSWORD_MAX), Buffer.from(salt, 'base64url'), expected.length, options);
  return stored !== null && timingSafeEqual(got, expected);
}

/** Refuse a password too short to resist guessing or too long to hash cheaply; `action` starts the message. */
function checkPassword(password: string, action?: string): void {
  const why =
    password.length < PASSWORD_MIN ? `the password must have at least ${PASSWORD_MIN} characters, got ${password.length}`
    : password.length > PASSWORD_MAX ? `the password must have at most ${PASSWORD_MAX} characters`
    : null;
  if (why) throw new Error(action ? `${action}: ${why}` : why);
}

export async function createUser(store: Store, input: { merchantId: string; email: string; password: string }, now: number): Promise<CabinetUser> {
  const action = 'cannot create cabinet user';
  if (!(await getMerchant(store, input.merchantId))) throw new Error(`${action}: merchant "${input.merchantId}" not found`);
  const email = input.email.trim().toLowerCase();
  if (!/^[^\s@]{1,64}@[^\s@]{1,190}\.[^\s@]{1,63}$/.test(email)) throw new Error(`${action}: "${input.email.slice(0, 80)}" is not an email address`);
  const hash = hashPassword(input.password, action);
  if (await getUserByEmail(store, email)) throw new Error(`${action}: "${email}" already has a user`);
  const id = uuid();
  await store.tx((tx) => tx.run('INSERT INTO cabinet_users (id, merchant_id, email, password_hash, created_at) VALUES (?, ?, ?, ?, ?)', id, input.merchantId, email, hash, now));
  return { id, merchant_id: input.merchantId, email, password_hash: hash, totp_secret: null, totp_pending: null, totp_last_step: 0, created_at: now, disabled_at: null };
}

export function getUser(q: Reader, id: string): Promise<CabinetUser | undefined> {
  return q.get<CabinetUser>('SELECT * FROM cabinet_users WHERE id = ?', id);
}

export function getUserByEmail(q: Reader, email: string): Promise<CabinetUser | undefined> {
  return q.get<CabinetUser>('SELECT * FROM cabinet_users WHERE email = ?', email.trim().toLowerCase());
}

export function listUsers(q: Reader, merchantId?: string): Promise<CabinetUser[]> {
  return merchantId
    ? q.all<CabinetUser>('SELECT * FROM cabinet_users WHERE merchant_id = ? ORDER BY created_at, id', merchantId)
    : q.all<CabinetUser>('SELECT * FROM cabinet_users ORDER BY created_at, id');
}

/** Disable a user (by id or email) and end all their sessions at once. */
export async function disableUser(store: Store, idOrEmail: string, now: number): Promise<CabinetUser> {
  const user = (await getUser(store, idOrEmail)) ?? (await getUserByEmail(store, idOrEmail));
  if (!user) throw new Error(`cannot disable cabinet user "${idOrEmail}": not found`);
  if (user.disabled_at !== null) throw new Error(`cannot disable cabinet user "${user.email}": already disabled`);
  await store.tx(async (tx) => {
    await tx.run('UPDATE cabinet_users SET disabled_at = ? WHERE id = ?', now, user.id);
    await tx.run('DELETE FROM cabinet_sessions WHERE user_id = ?', user.id);
  });
  return { ...user, disabled_at: now };
}

/** Where a user's TOTP secret is sealed: the AES-GCM context binds the ciphertext to its column and user. */
function totpContext(column: 'totp_secret' | 'totp_pending', userId: string): string {
  return `cabinet_users.${column}:${userId}`;
}

/** A user's confirmed TOTP secret (`totp_secret`) or that of an enrolment in progress (`totp_pending`), base32; null when none. */
export function totpSecret(store: Store, user: CabinetUser, column: 'totp_secret' | 'totp_pending' = 'totp_secret'): string | null {
  const sealed = user[column];
  return sealed === null ? null : unseal(store.path, sealed, totpContext(column, user.id));
}

/** A refused or failed password check inside a session, as the message the page shows. */
export function checkRefusal(action: string, outcome: CheckOutcome, wrong: string): string {
  if (outcome.kind === 'refused') return `${action}: too many failed attempts; try again in ${Math.max(1, Math.ceil(outcome.wait_ms / 1000))} s`;
  return `${action}: ${wrong}${outcome.kind === 'failed' && outcome.locked ? '; the account is locked for 15 minutes' : ''}`;
}

/** Replace a user's password, `current` checked under the sign-in throttle of the email; the other sessions end (a stolen one too). */
export async function changePassword(store: Store, userId: string, current: string, next: string, o: { keepSession: string; ip: string; now: number }): Promise<void> {
  const action = 'Cannot change the password';
  const user = await getUser(store, userId);
  if (!user) throw new Error(`${action}: user "${userId}" not found`);
  checkPassword(next, action);
  const outcome = await throttledCheck(store, { email: user.email, ip: o.ip, now: o.now }, () => verifyPassword(user.password_hash, current));
  if (outcome.kind !== 'passed') throw new Error(checkRefusal(action, outcome, 'the current password is wrong'));
  // The slow hash of the new password only once the attempt passed the throttle and the current password.
  const hash = hashPassword(next);
  await store.tx(async (tx) => {
    await tx.run('UPDATE cabinet_users SET password_hash = ? WHERE id = ?', hash, userId);
    await tx.run('DELETE FROM cabinet_sessions WHERE user_id = ? AND token_hash <> ?', userId, o.keepSession);
  });
}

/** Begin TOTP enrolment: a new secret, sealed, is held as pending until a code from it confirms it. */
export async function startTotp(store: Store, userId: string): Promise<string> {
  // 20 random bytes: RFC 4226's recommended length for HMAC-SHA1.
  const secret = base32(randomBytes(20));
  await store.tx((tx) => tx.run('UPDATE cabinet_users SET totp_pending = ? WHERE id = ?', seal(store.path, secret, totpContext('totp_pending', userId)), userId));
  return secret;
}

/** Confirm enrolment with a code of the pending secret: TOTP on, and recovery codes returned to show once (their hashes kept). */
export async function confirmTotp(store: Store, userId: string, code: string, now: number): Promise<string[]> {
  const user = await getUser(store, userId);
  const pending = user ? totpSecret(store, user, 'totp_pending') : null;
  if (!pending) throw new Error('Cannot turn on two-step sign-in: start again, no secret is pending');
  const step = matchTotp(pending, code.replace(/\s/g, ''), now, 0);
  if (step === null) throw new Error('Cannot turn on two-step sign-in: the code does not match; check the phone clock and try the next code');
  const codes = Array.from({ length: RECOVERY_CODES }, () => base32(randomBytes(10)).toLowerCase().replace(/(.{4})(?=.)/g, '$1-'));
  const sealed = seal(store.path, pending, totpContext('totp_secret', userId));
  await store.tx(async (tx) => {
    await tx.run('UPDATE cabinet_users SET totp_secret = ?, totp_pending = NULL, totp_last_step = ? WHERE id = ?', sealed, step, userId);
    await tx.run('DELETE FROM cabinet_recovery_codes WHERE user_id = ?', userId);
    for (const c of codes) await tx.run('INSERT INTO cabinet_recovery_codes (user_id, code_hash) VALUES (?, ?)', userId, sha256Hex(c));
  });
  return codes;
}

export async function disableTotp(store: Store, userId: string): Promise<void> {
  await store.tx(async (tx) => {
    await tx.run('UPDATE cabinet_users SET totp_secret = NULL, totp_pending = NULL, totp_last_step = 0 WHERE id = ?', userId);
    await tx.run('DELETE FROM cabinet_recovery_codes WHERE user_id = ?', userId);
  });
}

/** The second factor of a sign-in: a current TOTP code (used once) or an unused recovery code (then spent). */
export async function acceptSecondFactor(store: Store, user: CabinetUser, code: string, now: number): Promise<'totp' | 'recovery' | null> {
  const secret = totpSecret(store, user);
  if (!secret) return null;
  const clean = code.trim().toLowerCase();
  const step = matchTotp(secret, clean.replace(/\s/g, ''), now, user.totp_last_step);
  if (step !== null) {
    // Guarded by the step read, so two sign-ins racing with one code cannot both pass.
    const won = await store.tx(async (tx) => (await tx.run('UPDATE cabinet_users SET totp_last_step = ? WHERE id = ? AND totp_last_step < ?', step, user.id, step)).changes);
    return won ? 'totp' : null;
  }
  const spent = await store.tx(
    async (tx) => (await tx.run('UPDATE cabinet_recovery_codes SET used_at = ? WHERE user_id = ? AND code_hash = ? AND used_at IS NULL', now, user.id, sha256Hex(clean))).changes,
  );
  return spent ? 'recovery' : null;
}

export async function recoveryCodesLeft(q: Reader, userId: string): Promise<number> {
  return (await q.get<{ n: number }>('SELECT COUNT(*) AS n FROM cabinet_recovery_codes WHERE user_id = ? AND used_at IS NULL', userId))!.n;
}

const B32 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';

/** Length of one TOTP time step (RFC 6238's default, what every authenticator app uses). */
const TOTP_STEP_S = 30;
/** Steps either side of now a code is still accepted in: covers a phone clock off by half a minute. */
const TOTP_WINDOW_STEPS = 1;

/** Bytes as RFC 4648 base32 without padding (the form otpauth:// URIs carry). */
export function base32(bytes: Buffer): string {
  let bits = 0;
  let value = 0;
  let out = '';
  for (const b of bytes) {
    value = (value << 8) | b;
    bits += 8;
    while (bits >= 5) {
      out += B32[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += B32[(value << (5 - bits)) & 31];
  return out;
}

/** RFC 4648 base32 text (case and padding ignored) as bytes; throws on a character outside the alphabet. */
export function fromBase32(text: string): Buffer {
  let bits = 0;
  let value = 0;
  const out: number[] = [];
  for (const c of text.toUpperCase().replace(/=+$/, '')) {
    const i = B32.indexOf(c);
    if (i < 0) throw new Error(`cannot decode base32: bad character "${c}"`);
    value = (value << 5) | i;
    bits += 5;
    if (bits >= 8) {
      out.push((value >>> (bits - 8)) & 255);
      bits -= 8;
    }
  }
  return Buffer.from(out);
}

/** The 6-digit HOTP code (RFC 4226) of a base32 secret at a counter. */
function hotp(secretB32: string, counter: number): string {
  const msg = Buffer.alloc(8);
  msg.writeBigUInt64BE(BigInt(counter));
  const mac = createHmac('sha1', fromBase32(secretB32)).update(msg).digest();
  const off = mac[mac.length - 1] & 15;
  const bin = ((mac[off] & 0x7f) << 24) | (mac[off + 1] << 16) | (mac[off + 2] << 8) | mac[off + 3];
  return String(bin % 1_000_000).padStart(6, '0');
}

function totpStep(now_ms: number): number {
  return Math.floor(now_ms / 1000 / TOTP_STEP_S);
}

export function totpCode(secretB32: string, now_ms: number): string {
  return hotp(secretB32, totpStep(now_ms));
}

/** The step a code matches around now, or null; steps at or before `lastStep` are refused, so a seen code cannot sign in again. */
function matchTotp(secretB32: string, code: string, now_ms: number, lastStep: number): number | null {
  if (!/^\d{6}$/.test(code)) return null;
  const now = totpStep(now_ms);
  for (let d = -TOTP_WINDOW_STEPS; d <= TOTP_WINDOW_STEPS; d++) {
    const step = now + d;
    if (step > lastStep && hotp(secretB32, step) === code) return step;
  }
  return null;
}

/** The otpauth:// URI an authenticator app reads from the enrolment QR code. */
export function otpauthUri(secretB32: string, account: string): string {
  return `otpauth://totp/${encodeURIComponent(`kopek:${account}`)}?secret=${secretB32}&issuer=kopek&algorithm=SHA1&digits=6&period=${TOTP_STEP_S}`;
}

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
    const greatest = { sqlite: 'max', postgres: 'GREATEST' }[tx.engine];
    await tx.run(`UPDATE cabinet_login_failures SET failures = ${greatest}(failures - 1, 0) WHERE subject = ?`, addr.subject);
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
type CheckOutcome = { kind: 'refused'; wait_ms: number } | { kind: 'failed'; locked: boolean } | { kind: 'passed' };

/** Runs `check` (password, TOTP...) under the email's sign-in throttle, reserved before the slow hash; sign-in and in-session checks share it. */
export async function throttledCheck(store: Store, o: { email: string; ip: string; now: number }, check: () => Promise<boolean>): Promise<CheckOutcome> {
  const attempt = await reserveAttempt(store, o.email, o.ip, o.now);
  if (!attempt.ok) return { kind: 'refused', wait_ms: attempt.wait_ms };
  if (!(await check())) return { kind: 'failed', locked: attempt.locks };
  await attemptSucceeded(store, o.email, o.ip);
  return { kind: 'passed' };
}
