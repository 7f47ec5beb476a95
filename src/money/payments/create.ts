import type { Core } from '../core/core';
import type { Tx } from '../../platform/storage/store';
import type { Mode } from '../../platform/clock';
import { badRequest } from '../../platform/http/errors';
import { amountField, bodyObject, currencyField, enumField, intField, strField, urlControlChar } from '../../platform/http/body';
import { NEXT_PAYMENT_SEQ } from '../../platform/storage/dialect';
import { uuid } from '../../platform/util/ids';
import type { PaymentsCore } from './core';
import { LINK_SWEEP_JOB, openSessionTx } from './state';
import { insertedRow, insertPayment, type InsertParams } from './store';
import { PAYMENT_METHODS, type PaymentMethod, type PaymentRow } from '../bank-port/payment';
import type { EventInput } from '../events/events';
import type { BankPort } from '../bank-port/port';
import { allowListOf, literalRefusal, TEST_MODE_PERMITS } from '../webhooks/url-safety';

export const CREATE_FIELDS = ['amount', 'currency', 'method', 'order_id', 'customer_id', 'return_url', 'description', 'webhook_url', 'ttl_minutes', 'metadata'] as const;

/** A merchant's value under one of these names is overwritten. */
export const RESERVED_METADATA = ['mode', 'kind', 'webhook_url', 'customer_id', 'bank_ref', 'failure_code', 'bank_failure_code', 'simulator_outcome', 'simulator_failure_code'];

export const TTL_DEFAULT_MIN = 60;
export const TTL_MAX_MIN = 7 * 24 * 60;

/** After validation. */
export interface PaymentInput {
  merchantId: string;
  shopId: string;
  mode: Mode;
  amount: number;
  currency: string;
  method: PaymentMethod;
  orderId?: string;
  customerId?: string;
  returnUrl?: string;
  description?: string;
  webhookUrl?: string;
  ttlMinutes?: number;
  metadata?: Record<string, string>;
  /** payment (default), token_binding, subscription_init, subscription_charge, token_charge. */
  kind?: string;
  /** A merchant-initiated charge of this saved method: its session opens at once. */
  tokenId?: string;
}

const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);

/** A URL field: https, or http to a loopback host when `loopbackHttp`; any http(s) when `anyHttp`. */
export function urlField(obj: Record<string, unknown>, name: string, opts: { loopbackHttp: boolean; anyHttp: boolean }): string | undefined {
  const v = strField(obj, name, { max: 2048 });
  if (v === undefined) return undefined;
  const control = urlControlChar(v);
  if (control) throw badRequest(`Field "${name}" must not contain control characters written raw (${control}); percent-encode them`, name);
  let u: URL;
  try {
    u = new URL(v);
  } catch {
    throw badRequest(`Field "${name}" must be an absolute URL, got "${v.slice(0, 64)}"`, name);
  }
  if (u.protocol === 'https:') return v;
  if (u.protocol === 'http:' && (opts.anyHttp || (opts.loopbackHttp && LOOPBACK_HOSTS.has(u.hostname)))) return v;
  const allowed = opts.anyHttp ? 'http:// or https://' : opts.loopbackHttp ? 'https:// (or http:// to localhost, 127.0.0.1, [::1] with a test key)' : 'https://';
  throw badRequest(`Field "${name}" must use ${allowed}, got "${v.slice(0, 64)}"`, name);
}

/**
 * Refused at once when its host is an IP address webhooks of the mode never reach, unless `allow`
 * (--webhook-allow) has its range. A host name is checked at each delivery, as its addresses may change.
 */
function webhookUrlField(obj: Record<string, unknown>, mode: Mode, allow: readonly string[]): string | undefined {
  const v = urlField(obj, 'webhook_url', { loopbackHttp: false, anyHttp: mode === 'test' });
  if (v === undefined) return undefined;
  const why = literalRefusal(new URL(v), allowListOf(allow), mode === 'test' ? TEST_MODE_PERMITS : undefined);
  if (why) throw badRequest(`Cannot use webhook_url "${v.slice(0, 64)}": webhooks never reach the ${why}`, 'webhook_url');
  return v;
}

/** `allow` is the operator's --webhook-allow. */
export function parseCreateBody(body: unknown, auth: { merchantId: string; shopId: string; mode: Mode }, allow: readonly string[] = []): PaymentInput {
  const obj = bodyObject(body, CREATE_FIELDS);
  const test = auth.mode === 'test';
  const metadata: Record<string, string> = {};
  const input: PaymentInput = {
    merchantId: auth.merchantId,
    shopId: auth.shopId,
    mode: auth.mode,
    amount: amountField(obj, 'amount', true)!,
    currency: currencyField(obj),
    method: enumField(obj, 'method', PAYMENT_METHODS, 'any')!,
    orderId: strField(obj, 'order_id', { max: 128 }),
    customerId: strField(obj, 'customer_id', { max: 128 }),
    returnUrl: urlField(obj, 'return_url', { loopbackHttp: test, anyHttp: false }),
    description: strField(obj, 'description', { max: 1000 }),
    webhookUrl: webhookUrlField(obj, auth.mode, allow),
    ttlMinutes: intField(obj, 'ttl_minutes', { min: 1, max: TTL_MAX_MIN }),
    metadata,
  };
  // Checked last, in the order of the fields: the first error found is the one answered.
  const v = obj.metadata;
  if (v === undefined || v === null) return input;
  if (typeof v !== 'object' || Array.isArray(v)) throw badRequest('Field "metadata" must be an object of string values', 'metadata');
  for (const [k, val] of Object.entries(v as Record<string, unknown>)) {
    if (typeof val !== 'string') {
      throw badRequest(`Field "metadata.${k}" must be a string (pass numbers and booleans as "42", "true"), got ${typeof val === 'object' ? (val === null ? 'null' : 'an object') : String(val)}`, `metadata.${k}`);
    }
    metadata[k] = val;
  }
  return input;
}

/** A saved method needs no buyer: its session opens at once (decisions.md). */
export function opensAtOnce(input: PaymentInput): boolean {
  return input.tokenId !== undefined || input.method === 'recurrent';
}

/** Created at `now` on its shop's clock, with its bank's metadata (`described`: test payments, their simulator plan). */
export function draftPayment(bank: BankPort, input: PaymentInput, now: number, described: Record<string, string>) {
  const meta: Record<string, string> = {};
  if (input.metadata) {
    Object.assign(meta, input.metadata);
    for (const k of RESERVED_METADATA) delete meta[k];
  }
  meta.mode = input.mode;
  // The hosted page titles itself by metadata.kind: only the service may name a card binding.
  if (input.kind && input.kind !== 'payment') meta.kind = input.kind;
  if (input.webhookUrl) meta.webhook_url = input.webhookUrl;
  if (input.customerId) meta.customer_id = input.customerId;
  Object.assign(meta, described);
  const id = uuid();
  const params: InsertParams = {
    seq: 0,
    id,
    public_id: '',
    kind: input.kind ?? 'payment',
    merchant_id: input.merchantId,
    shop_id: input.shopId,
    mode: input.mode,
    order_id: input.orderId ?? `ord_${now}`,
    amount: input.amount,
    currency: input.currency,
    method: input.method,
    method_fixed: input.method === 'any' ? 0 : 1,
    return_url: input.returnUrl ?? '',
    description: input.description ?? '',
    webhook_url: input.webhookUrl ?? '',
    purpose: '',
    metadata: JSON.stringify(meta),
    created_at: now,
    expires_at: now + (input.ttlMinutes ?? TTL_DEFAULT_MIN) * 60_000,
  };
  const created: EventInput = { merchantId: params.merchant_id, shopId: params.shop_id, mode: params.mode, kind: 'payment.created', payload: { id, amount: params.amount, status: 'pending' }, at: now, paymentId: id };
  return { params, created, bank };
}

/**
 * Pending, its expiry covered by the shop's sweep, payment.created appended, with its 201 body (creationBody). A saved
 * method's payment is written once, when its session opens (pending only in this transaction). One clock read, one bank.
 */
export async function createWithAnswer(core: PaymentsCore, tx: Tx, input: PaymentInput): Promise<{ row: PaymentRow; body: Record<string, unknown> }> {
  const atOnce = opensAtOnce(input);
  // Independent: one round trip on PostgreSQL, with the BEGIN.
  const [now, bank, seq] = await Promise.all([
    core.clocks.now(tx, input.shopId, input.mode),
    core.banks.for(tx, input.shopId, input.mode),
    atOnce ? undefined : tx.get<{ n: number }>(NEXT_PAYMENT_SEQ[tx.engine]),
  ]);
  const { params, created } = draftPayment(bank, input, now, await bank.describePayment(tx, input));
  let row: PaymentRow;
  if (atOnce) {
    await core.events.append(tx, created);
    row = await openSessionTx(core, tx, insertedRow(params), { tokenId: input.tokenId, unwritten: params, bank, at: now });
  } else {
    // Independent: one round trip on PostgreSQL instead of three.
    [row] = await Promise.all([insertPayment(tx, params, seq!.n), core.events.append(tx, created), core.scheduler.ensureDueBy(tx, { kind: LINK_SWEEP_JOB, subjectId: `${params.shop_id}/${params.mode}`, shopId: params.shop_id, mode: params.mode, dueAt: params.expires_at })]);
  }
  return { row, body: creationBody(core, bank, row) };
}

export async function createPaymentTx(core: PaymentsCore, tx: Tx, input: PaymentInput): Promise<PaymentRow> {
  return (await createWithAnswer(core, tx, input)).row;
}

/** The specification's creation response, plus the bank's additions (the simulator's block in test mode). */
export function creationBody(core: Pick<Core, 'payPageUrl'>, bank: BankPort, row: PaymentRow): Record<string, unknown> {
  const body: Record<string, unknown> = {
    payment: {
      id: row.id,
      public_id: row.public_id,
      merchant_id: row.merchant_id,
      shop_id: row.shop_id,
      order_id: row.order_id,
      amount: row.amount,
      currency: row.currency,
      method: row.method,
      status: row.status,
      expires_at: new Date(row.expires_at).toISOString(),
      created_at: new Date(row.created_at).toISOString(),
      metadata: JSON.parse(row.metadata) as Record<string, string>,
    },
    payment_url: `${core.payPageUrl}/pay/${row.id}`,
    mode: row.mode,
  };
  const extras = bank.creationExtras(row);
  if (extras) Object.assign(body, extras);
  return body;
}
