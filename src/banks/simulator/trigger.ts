import type { Ctx, Reply } from '../../platform/http/types';
import type { PaymentsCore } from '../../money/payments/core';
import { ApiError, badRequest } from '../../platform/http/errors';
import { bodyObject, describe } from '../../platform/http/body';
import type { EventRow } from '../../money/events/events';
import { isTriggerEvent, parseTriggerSet, triggerKind, triggerScopes, TRIGGER_EVENT_NAMES, type TriggerEvent } from './trigger-events';
import { SCENARIOS, type TriggerShop } from './trigger-scenarios';

/** Most events one trigger reads back (the longest path sends a handful). */
const EVENTS_READ_MAX = 100;

function eventField(obj: Record<string, unknown>): TriggerEvent {
  const v = obj.event;
  if (v === undefined || v === null) throw badRequest(`Field "event" is required: one of ${TRIGGER_EVENT_NAMES.join(', ')}`, 'event');
  if (typeof v !== 'string' || !isTriggerEvent(v)) {
    throw badRequest(`Cannot trigger event ${describe(v)}: it is not one kopek sends; the events are ${TRIGGER_EVENT_NAMES.join(', ')}`, 'event');
  }
  return v;
}

// POST /v1/test/trigger {"event", "set"?}: makes the event happen now in one transaction, through a buyer's paths; 201 after
// commit (the event is in the delivery log and on the stream) with every webhook event sent and the objects made.
export async function triggerEvent(ctx: Ctx<PaymentsCore>): Promise<Reply> {
  const obj = bodyObject(ctx.body, ['event', 'set']);
  const event = eventField(obj);
  const set = parseTriggerSet(event, obj.set);
  const auth = ctx.auth!;
  for (const scope of triggerScopes(event)) {
    if (!auth.scopes.has(scope)) throw new ApiError(403, 'scope_required', `Cannot trigger ${event}: the key needs scope "${scope}"`);
  }
  const shop: TriggerShop = { merchantId: auth.merchantId, shopId: auth.shopId, keyId: auth.keyId };
  const body = await ctx.app.store.write(async (tx) => {
    // Events this transaction appends have a greater seq (not a stream position: on PostgreSQL it has none until commit).
    const mark = (await tx.get<{ n: number }>('SELECT coalesce(max(seq), 0) AS n FROM events'))!.n;
    const objects = await SCENARIOS[triggerKind(event)](ctx.app, tx, shop, event, set);
    const appended = await tx.all<EventRow>(
      `SELECT * FROM events WHERE shop_id = ? AND mode = 'test' AND seq > ? ORDER BY seq LIMIT ?`, shop.shopId, mark, EVENTS_READ_MAX,
    );
    const webhooks = appended
      .filter((e) => e.webhook_event !== null)
      .map((e) => ({ id: e.id, event: e.webhook_event! }));
    const own = webhooks.find((w) => w.event === event);
    // Each path is built to end in its event; one that did not is a fault here, and the transaction rolls back.
    if (!own) throw new Error(`cannot trigger ${event}: its path sent ${webhooks.map((w) => w.event).join(', ') || 'no webhook'}`);
    return { event, event_id: own.id, webhooks, ...objects };
  });
  ctx.logExtra = { event_id: body.event_id };
  return { status: 201, body };
}

