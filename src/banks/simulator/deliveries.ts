import type { Core } from '../../money/core/core';
import type { Ctx, Reply } from '../../platform/http/types';
import { badRequest } from '../../platform/http/errors';
import { isUuid } from '../../platform/util/ids';
import { deliveryLog } from '../../money/webhooks/store';

const EVENT_ID_RE = /^evt_[0-9A-HJKMNP-TV-Z]{26}$/;
const QUERY = ['event_id', 'payment_id'];

/** GET /v1/test/webhooks/deliveries?event_id=&payment_id=: the test-mode delivery log of the key's shop, oldest first. */
export async function listDeliveries(ctx: Ctx<Pick<Core, 'store'>>): Promise<Reply> {
  for (const k of ctx.query.keys()) {
    if (!QUERY.includes(k)) throw badRequest(`Cannot filter deliveries by "${k}"; allowed: ${QUERY.join(', ')}`, k);
  }
  const eventId = ctx.query.get('event_id') || undefined;
  const paymentId = ctx.query.get('payment_id') || undefined;
  if (eventId !== undefined && !EVENT_ID_RE.test(eventId)) {
    throw badRequest(`Cannot filter deliveries: event_id must be evt_ and 26 base32 characters, got "${eventId.slice(0, 64)}"`, 'event_id');
  }
  if (paymentId !== undefined && !isUuid(paymentId)) {
    throw badRequest(`Cannot filter deliveries: payment_id must be a UUID, got "${paymentId.slice(0, 64)}"`, 'payment_id');
  }
  const items = (await deliveryLog(ctx.app.store, { shopId: ctx.auth!.shopId, mode: 'test', eventId, paymentId })).map(
    ({ shop_id: _s, mode: _m, delivery_id: _d, ...item }) => item,
  );
  return { body: { items } };
}
