import type { Mode } from '../../platform/clock';
import type { RefundRow } from './refund';

/** Every payment status of the specification. */
export const PAYMENT_STATUSES = ['pending', 'processing', 'succeeded', 'failed', 'cancelled', 'refunded', 'expired'] as const;
export type PaymentStatus = (typeof PAYMENT_STATUSES)[number];

/** Methods a payment may be created with; `any` lets the buyer choose on the hosted page. */
export const PAYMENT_METHODS = ['sbp', 'cards', 'tpay', 'bankpay', 'recurrent', 'any'] as const;
export type PaymentMethod = (typeof PAYMENT_METHODS)[number];
/** A method a buyer (or a charge) can actually pay with. */
export type ConcreteMethod = Exclude<PaymentMethod, 'any'>;

/** Bank session lifetime per method (decisions.md): processing_until = session open + this. */
export const SESSION_TTL_MS: Record<ConcreteMethod, number> = {
  sbp: 20 * 60_000,
  cards: 15 * 60_000,
  tpay: 20 * 60_000,
  bankpay: 20 * 60_000,
  recurrent: 5 * 60_000,
};

/** Statuses after which nothing but a refund changes the payment. */
export const FINAL_STATUSES: ReadonlySet<PaymentStatus> = new Set(['succeeded', 'failed', 'cancelled', 'refunded', 'expired']);

export interface PaymentRow {
  seq: number;
  id: string;
  public_id: string;
  kind: string;
  merchant_id: string;
  shop_id: string;
  mode: Mode;
  order_id: string;
  status: PaymentStatus;
  amount: number;
  amount_refunded: number;
  currency: string;
  method: PaymentMethod;
  method_fixed: number;
  return_url: string;
  description: string;
  webhook_url: string;
  purpose: string;
  metadata: string;
  rrn: string;
  bank_name: string;
  card_brand: string;
  card_mask: string;
  card_holder: string;
  phone_mask: string;
  payer_bank: string;
  created_at: number;
  expires_at: number;
  processing_until: number | null;
  captured_at: number | null;
  finalized_at: number | null;
}

/** A refund as the API shows it (inside a payment and as a create answer). */
export interface RefundView extends Pick<RefundRow, 'id' | 'payment_id' | 'merchant_id' | 'amount' | 'reason' | 'status' | 'failure_code'> {
  created_at: string;
  completed_at?: string | null;
}

/** The Payment object of the API and of webhooks: a string not known yet is "", a time null. */
export interface PaymentView extends Pick<PaymentRow, 'id' | 'public_id' | 'merchant_id' | 'shop_id' | 'order_id' | 'status' | 'amount'
  | 'amount_refunded' | 'currency' | 'method' | 'rrn' | 'bank_name' | 'return_url' | 'description' | 'purpose'> {
  shop_name: string;
  created_at: string;
  captured_at: string | null;
  finalized_at: string | null;
  expires_at: string;
  processing_until: string | null;
  metadata: Record<string, string>;
  customer_card_brand: string;
  customer_card_mask: string;
  customer_card_holder: string;
  customer_phone_mask: string;
  customer_payer_bank: string;
  refunds: RefundView[];
}
