import { randomBytes, scrypt, scryptSync, timingSafeEqual } from 'node:crypto';
import type { Reader, Store } from '../../platform/storage/store';
import { uuid, sha256Hex } from '../../platform/util/ids';
import { seal, unseal } from '../../platform/secrets/at-rest';
import { getMerchant } from '../../money/shops/store';
import { base32, matchTotp, newTotpSecret } from './totp';
import { throttledCheck, type CheckOutcome } from './throttle';

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
  /** The secret offered during enrolment, sealed too (pendingTotpSecret reads it). */
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

/** True when `password` matches `stored` (scrypt runs on the thread pool, off the event loop). */
export async function verifyPassword(stored: string | null, password: string): Promise<boolean> {
  decoyHash ??= hashPassword(randomBytes(16).toString('hex'));
  const parts = (stored ?? decoyHash).split('$');
  if (parts.length !== 6 || parts[0] !== 'scrypt') return false;
  const [, n, r, p, salt, key] = parts;
  const expected = Buffer.from(key, 'base64url');
  const got = await new Promise<Buffer>((resolve, reject) =>
    scrypt(password.slice(0, PASSWORD_MAX), Buffer.from(salt, 'base64url'), expected.length, { N: Number(n), r: Number(r), p: Number(p), maxmem: SCRYPT.maxmem }, (err, k) =>
      err ? reject(err) : resolve(k),
    ),
  );
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

/** An email as the cabinet keys it: trimmed, lower case; throws unless it looks like one. */
function normalEmail(email: string, action: string): string {
  const e = email.trim().toLowerCase();
  if (!/^[^\s@]{1,64}@[^\s@]{1,190}\.[^\s@]{1,63}$/.test(e)) throw new Error(`${action}: "${email.slice(0, 80)}" is not an email address`);
  return e;
}

export async function createUser(store: Store, input: { merchantId: string; email: string; password: string }, now: number): Promise<CabinetUser> {
  const action = 'cannot create cabinet user';
  if (!(await getMerchant(store, input.merchantId))) throw new Error(`${action}: merchant "${input.merchantId}" not found`);
  const email = normalEmail(input.email, action);
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

/** Every user, or a merchant's, oldest first. */
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
function totpSecret(store: Store, user: CabinetUser, column: 'totp_secret' | 'totp_pending' = 'totp_secret'): string | null {
  const sealed = user[column];
  return sealed === null ? null : unseal(store.path, sealed, totpContext(column, user.id));
}

export const pendingTotpSecret = (store: Store, user: CabinetUser): string | null => totpSecret(store, user, 'totp_pending');

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
  const secret = newTotpSecret();
  await store.tx((tx) => tx.run('UPDATE cabinet_users SET totp_pending = ? WHERE id = ?', seal(store.path, secret, totpContext('totp_pending', userId)), userId));
  return secret;
}

/** Confirm enrolment with a code of the pending secret: TOTP on, and recovery codes returned to show once (their hashes kept). */
export async function confirmTotp(store: Store, userId: string, code: string, now: number): Promise<string[]> {
  const user = await getUser(store, userId);
  const pending = user ? pendingTotpSecret(store, user) : null;
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

/** The email of the cabinet user made for the demo merchant on an empty database. */
export const DEMO_EMAIL = 'demo@kopek.test';

/** A cabinet user for the demo merchant with a generated password, returned once (only its hash is kept); `email` for a second demo. */
export async function createDemoUser(store: Store, merchantId: string, now: number, email = DEMO_EMAIL): Promise<{ user: CabinetUser; password: string }> {
  const password = randomBytes(12).toString('base64url');
  return { user: await createUser(store, { merchantId, email, password }, now), password };
}
