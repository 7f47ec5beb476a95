import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { Reader, Store, Tx } from '../platform/storage/store';
import type { Logger } from '../platform/log';
import type { Core } from '../money/core/core';
import { fixedLookup, type Resolved, type UrlPolicy } from '../money/webhooks/url-safety';

/** Time a request job allows beyond the request's own timeout, so the request's unknown is what it records. */
export const JOB_MARGIN_MS = 5_000;

const MAX_ANSWER_BYTES = 1_048_576;

type Unknown = { kind: 'unknown'; reason: string };
type RawAnswer = { kind: 'answer'; status: number; body: Buffer } | Unknown;

export interface BankCall {
  method: 'GET' | 'POST';
  url: string;
  headers: Record<string, string | number>;
  payload?: Buffer;
  timeoutMs: number;
  /** The address a check of `url` found: the connection goes there. */
  resolved?: Resolved;
  /** Who is called, as the reasons name it ("acquirer", "provider"). */
  who: string;
}

/** One call within the deadline; a timeout, connection error, broken or too large answer is unknown (the far end may have acted). */
export function callBank(c: BankCall): Promise<RawAnswer> {
  return new Promise((resolve) => {
    const finish = (s: RawAnswer): void => {
      clearTimeout(timer);
      resolve(s);
    };
    if (!URL.canParse(c.url)) return resolve({ kind: 'unknown', reason: `the ${c.who} address is not a URL` });
    const u = new URL(c.url);
    const send = u.protocol === 'https:' ? httpsRequest : httpRequest;
    const req = send(u, { method: c.method, headers: c.headers, ...(c.resolved ? { lookup: fixedLookup(c.resolved) } : {}) }, (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (b: Buffer) => {
        size += b.length;
        if (size > MAX_ANSWER_BYTES) {
          req.destroy();
          finish({ kind: 'unknown', reason: 'the answer is too large' });
        } else chunks.push(b);
      });
      res.on('error', () => finish({ kind: 'unknown', reason: 'the connection broke while reading the answer' }));
      res.on('end', () => finish({ kind: 'answer', status: res.statusCode ?? 0, body: Buffer.concat(chunks) }));
    });
    const timer = setTimeout(() => {
      req.destroy();
      finish({ kind: 'unknown', reason: `no answer within ${c.timeoutMs} ms` });
    }, c.timeoutMs);
    req.on('error', (e: NodeJS.ErrnoException) => finish({ kind: 'unknown', reason: `connection error ${e.code ?? ''}`.trim() }));
    req.end(c.payload);
  });
}

/** An answer's body as a JSON object `valid` takes, or why it is none (`invalid` names a body that is JSON but not that). */
export function jsonObject(status: number, body: Buffer, invalid: string, valid = (_o: Record<string, unknown>) => true):
  { kind: 'object'; body: Record<string, unknown> } | Unknown {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString('utf8'));
  } catch {
    return { kind: 'unknown', reason: `HTTP ${status} with a body that is not JSON` };
  }
  const o = parsed as Record<string, unknown>;
  if (!o || typeof o !== 'object' || Array.isArray(o) || !valid(o)) return { kind: 'unknown', reason: `HTTP ${status} with ${invalid}` };
  return { kind: 'object', body: o };
}

/** A request to a live bank: a row of bank_requests, written queued in the domain's transaction. */
export interface BankRequestRow {
  id: number;
  shop_id: string;
  mode: 'test' | 'live';
  provider: string;
  operation: string;
  subject_kind: 'payment' | 'refund' | 'payout';
  subject_id: string;
  order_id: string;
  bank_payment_id: string;
  /** The JSON body as sent, without Password, Token, RebillId or a card number. */
  request: string;
  state: 'queued' | 'sent' | 'answered' | 'unknown';
  answer: string;
  created_at: number;
  sent_at: number | null;
  answered_at: number | null;
}

/** Record a live request, queued, and the job `jobKind` that sends it after commit; secrets are added only when it is sent. */
export async function recordRequest(
  core: Pick<Core, 'clocks' | 'scheduler'>, tx: Tx, jobKind: string, payload: Record<string, unknown>,
  r: Pick<BankRequestRow, 'shop_id' | 'provider' | 'operation' | 'subject_kind' | 'subject_id' | 'order_id' | 'bank_payment_id' | 'request'>,
): Promise<void> {
  const info = await tx.run(
    `INSERT INTO bank_requests (shop_id, mode, provider, operation, subject_kind, subject_id, order_id, bank_payment_id, request, state, created_at)
       VALUES (?, 'live', ?, ?, ?, ?, ?, ?, ?, 'queued', ?) RETURNING id`,
    r.shop_id, r.provider, r.operation, r.subject_kind, r.subject_id, r.order_id, r.bank_payment_id, r.request, core.clocks.real(),
  );
  const dueAt = await core.clocks.now(tx, r.shop_id, 'live');
  await core.scheduler.schedule(tx, { kind: jobKind, subjectId: String(info.lastInsertRowid), shopId: r.shop_id, mode: 'live', dueAt, payload });
}

export async function getRequest<R extends BankRequestRow = BankRequestRow>(q: Reader, id: number, provider: string): Promise<R | undefined> {
  return q.get<R>('SELECT * FROM bank_requests WHERE id = ? AND provider = ?', id, provider);
}

export async function markAnswered(tx: Tx, id: number, state: 'answered' | 'unknown', answer: string, bankPaymentId: string, now: number): Promise<void> {
  await tx.run(
    `UPDATE bank_requests SET state = ?, answer = ?, answered_at = ?, bank_payment_id = CASE WHEN ? <> '' THEN ? ELSE bank_payment_id END WHERE id = ?`,
    state, answer, now, bankPaymentId, bankPaymentId, id,
  );
}

/** What a provider's run makes of its row: the call to make (to `url`), or what it gives without calling. */
type Call<T> = { kind: 'call'; url: string; call(resolved: Resolved): Promise<T> };
export type Prepared<T> = Call<T> | T;

interface SendContext {
  store: Store;
  clocks: { real(): number };
  log: Logger;
  policy: UrlPolicy;
  provider: string;
  /** As the log and the reasons name the far end: "T-Bank" and "acquirer", "YooKassa" and "provider". */
  bank: string;
  who: string;
  /** Said after a refused address's reason. */
  hint?: string;
}

// A request job's run, outside any transaction. Only the run moving the request from queued to sent sends it: one found
// sent already (the process died before its answer was recorded), or taken by another run (one frozen past its claim),
// is reported unknown and not sent again; a status check settles it. An address the policy refuses is never called: no
// credentials go to the operator's own network on a shop's word (a range is allowed with --webhook-allow).
export async function sendRecorded<R extends BankRequestRow, T extends { kind: string }>(
  c: SendContext, id: number, prepare: (row: R) => Promise<Prepared<T>>,
): Promise<T | Unknown> {
  const row = await getRequest<R>(c.store, id, c.provider);
  if (!row) return { kind: 'unknown', reason: 'the request record is gone' };
  if (row.state !== 'queued') return { kind: 'unknown', reason: 'sent before a restart; no answer was recorded' };
  const p = await prepare(row);
  if (p.kind !== 'call') return p as T;
  const { url, call } = p as Call<T>;
  let resolved: Resolved;
  try {
    resolved = await c.policy.checkProvider(new URL(url));
  } catch (err) {
    const reason = (err as Error).message;
    c.log.error(`${c.bank} request not sent: the ${c.who} address is refused`, { shop_id: row.shop_id, operation: row.operation, reason });
    return { kind: 'unknown', reason: `not sent: the ${c.who} address is refused: ${reason}${c.hint ?? ''}` };
  }
  const sent = await c.store.write(async (tx) => {
    const changes = await tx.run(`UPDATE bank_requests SET state = 'sent', sent_at = ? WHERE id = ? AND state = 'queued'`, c.clocks.real(), row.id);
    return changes.changes === 1;
  });
  if (!sent) return { kind: 'unknown', reason: 'sent by another run; no answer was recorded here' };
  return call(resolved);
}
