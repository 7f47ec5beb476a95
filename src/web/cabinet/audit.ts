import type { Reader, Store, Tx } from '../../platform/storage/store';

/** One line of the audit log. */
export interface AuditRow {
  id: number;
  merchant_id: string | null;
  user_id: string | null;
  email: string;
  action: string;
  target: string;
  detail: string;
  ip: string;
  at: number;
}

/** Who did something, for the audit log. */
export interface Actor {
  merchantId: string | null;
  userId: string | null;
  email: string;
  ip: string;
}

/** Longest detail kept per line: enough for a reason or a list of scopes, never a whole request. */
const DETAIL_MAX = 500;

/** Append a line to the audit log in its own transaction. A secret never goes into `detail`. */
export async function recordAudit(store: Store, actor: Actor, action: string, target: string, detail: string, now: number): Promise<void> {
  await store.tx((tx) => insertAudit(tx, actor, action, target, detail, now));
}

/** Append a line to the audit log inside the caller's transaction (the change and its line commit together). */
export async function insertAudit(tx: Tx, actor: Actor, action: string, target: string, detail: string, now: number): Promise<void> {
  {
    await tx.run(
      'INSERT INTO cabinet_audit (merchant_id, user_id, email, action, target, detail, ip, at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
      actor.merchantId,
      actor.userId,
      actor.email.slice(0, 254),
      action,
      target,
      detail.slice(0, DETAIL_MAX),
      actor.ip,
      now,
    );
  }
}

/** A page of a merchant's audit log, newest first: lines with id below `beforeId` when given. */
export function listAudit(q: Reader, merchantId: string, o: { beforeId?: number; limit: number }): Promise<AuditRow[]> {
  return q.all<AuditRow>('SELECT * FROM cabinet_audit WHERE merchant_id = ? AND id < ? ORDER BY id DESC LIMIT ?', merchantId, o.beforeId ?? Number.MAX_SAFE_INTEGER, o.limit);
}
