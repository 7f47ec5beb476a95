import type { Ctx, Reply } from '../../platform/http/types';
import type { Core } from '../../money/core/core';
import { ApiError } from '../../platform/http/errors';
import { recordAudit } from './audit';
import { setFlash } from './sessions';
import { actor } from './scope';
import { ct } from './text';

/** What a change is called in the audit log, and where the browser goes after it. */
export interface Change {
  /** Audit action, e.g. `key.revoke`. */
  action: string;
  target: string;
  /** Where to go after (a GET page of the cabinet). */
  back: string;
  /** The message shown on that page; default "Saved.", followed by what `fn` returned when that is a string. */
  ok?: string;
  /** True when `fn` audits inside its own commit (src/web/cabinet/domain.ts). */
  auditedInside?: boolean;
}

/**
 * Make a change the way every cabinet form does: run it (through the domain function the admin commands and
 * the API use), write the audit line, leave a message for the next page, and redirect there (POST → 303 → GET,
 * so a reload does not repeat it). A refusal (bad input, wrong state) changes nothing and shows its reason;
 * a fault of the server stays a 500.
 */
export async function change(ctx: Ctx<Pick<Core, 'store' | 'clocks'>>, c: Change, fn: () => unknown | Promise<unknown>): Promise<Reply> {
  const auth = ctx.cabinet!;
  let detail: unknown;
  try {
    detail = await fn();
  } catch (err) {
    if (err instanceof ApiError && err.status >= 500) throw err;
    if (!(err instanceof Error)) throw err;
    await setFlash(ctx.app.store, auth.sessionHash, 'error', err.message);
    return { status: 303, location: c.back };
  }
  if (!c.auditedInside) await recordAudit(ctx.app.store, actor(ctx), c.action, c.target, typeof detail === 'string' ? detail : '', ctx.app.clocks.real());
  await setFlash(ctx.app.store, auth.sessionHash, 'ok', `${c.ok ?? ct(auth.lang, 'saved')}${typeof detail === 'string' && detail ? ` ${detail}` : ''}`);
  return { status: 303, location: c.back };
}
