import type { Tx } from '../../platform/storage/store';
import type { Mode } from '../../platform/clock';
import type { PaymentRow } from './payment';
import type { RefundRow } from './refund';
import type { PayoutMethod } from './payout';

// The one seam between the domain and every bank. Payments, refunds, tokens, subscriptions and payouts
// reach a bank only through a BankPort that app.banks picks for a shop and mode; they never import an
// implementation. Each method that takes a `tx` runs inside the domain's transaction and awaits nothing but
// that `tx` (never the network): a bank behind a network records its request there (a job of its own) and
// reports the answer after commit through the domain's own entry point (payments/bank-answers.ts,
// refunds/bank-answers.ts, payouts/bank-answers.ts), where the simulator's scheduled answers and HTTP
// callbacks arrive too.

/** How a payment ended at the bank: a final answer, or `unknown` (which never fails anything). */
export type PaymentAnswer =
  | {
      outcome: 'succeeded';
      rrn?: string;
      bankName?: string;
      card?: { brand: string; mask: string; holder: string };
      phoneMask?: string;
      payerBank?: string;
    }
  | {
      outcome: 'refused';
      /** Unified failure code (decisions.md). */
      failureCode: string;
      /** The bank's own code, kept for audit as metadata.bank_failure_code. */
      bankCode: string;
      bankName?: string;
      card?: { brand: string; mask: string; holder: string };
    }
  /** The bank ended the session without paying (its deadline passed, or it was voided there). */
  | { outcome: 'expired' | 'cancelled' }
  /** Timeout, connection error, 5xx, an answer that cannot be read: ask again later. */
  | { outcome: 'unknown'; reason: string };

/** How a refund or a payout ended at the bank. */
export type MoneyAnswer =
  | { outcome: 'succeeded'; bankRef?: string }
  | { outcome: 'refused'; failureCode: string; bankCode: string }
  | { outcome: 'unknown'; reason: string };

/** Who opened a payment's session: the buyer on the hosted page, or the service (a saved method, a test helper). */
export type Opener = 'buyer' | 'service';

/** A payment whose bank session opens now (it has just moved to processing). */
export interface SessionRequest {
  payment: PaymentRow;
  by: Opener;
}

/** A payment about to be created: what the bank may attach to it (the simulator's plan). */
export interface NewPayment {
  shopId: string;
  mode: Mode;
  amount: number;
  kind: string;
  /** The saved method a merchant-initiated charge uses. */
  tokenId?: string;
}

/** A payout about to be created, before anything is written. */
export interface PayoutRequest {
  id: string;
  shopId: string;
  mode: Mode;
  amount: number;
  method: PayoutMethod;
  /** The SBP bank id for SBP payouts. */
  bankId?: string;
  /**
   * Where the money goes: the phone as the API took it (+7XXXXXXXXXX) and the 12-digit SBP member id for
   * payouts_sbp; the full card number for payouts_card, in memory only (never stored, logged or echoed).
   */
  recipient: { phone?: string; bankId?: string; cardNumber?: string };
  /** What the payout is for, when the request says it. */
  description?: string;
  at: number;
}

/** What the bank did with a payout request. */
export type PayoutStart =
  /** Refused before it exists: nothing is created (the test router's 502). */
  | { accepted: false; code: 'router_error' }
  | {
      accepted: true;
      bankRef: string;
      /** An answer known at once (an unknown SBP bank needs no bank to refuse it). */
      answer?: MoneyAnswer;
      /** What a test bank announced it will answer (shown in the creation response's simulator block). */
      plan?: { outcome: 'succeeded' | 'failed'; failureCode: string | null };
    };

/** What a status check asks about. */
export type OperationRef = { kind: 'payment'; payment: PaymentRow } | { kind: 'refund'; refund: RefundRow } | { kind: 'payout'; payoutId: string };

/** A bank's notification as the HTTP layer received it. */
export interface CallbackRequest {
  shopId: string;
  headers: Record<string, string | string[] | undefined>;
  body: unknown;
}

/** What a notification told, checked by the bank's implementation: answers to apply, and the reply the bank expects. */
export interface CallbackResult {
  /** false: forged or unreadable; answered 403 and nothing changes. */
  valid: boolean;
  payments: Array<{ paymentId: string; amount?: number; answer: PaymentAnswer }>;
  refunds: Array<{ refundId: string; answer: MoneyAnswer }>;
  /** The body the bank wants back (T-Bank: "OK"). */
  reply: string;
  /** The bank's own records of the notification (a saved method's RebillId), written in the same transaction. */
  record?: (tx: Tx) => Promise<void>;
}

/**
 * What the hosted page shows the buyer of a processing payment, as the bank's session answer told it: go on
 * to the bank's own page (cards, T-Pay, bank wallet), or scan the SBP QR payload on kopek's page; `waiting`
 * while the bank has not answered yet.
 */
export type PageSession = { kind: 'redirect'; url: string } | { kind: 'qr'; payload: string } | { kind: 'waiting' };

/** A bank behind the port. */
export interface BankPort {
  /** Provider name, as shops name their acquirer ("simulator", "tbank", ...). */
  readonly provider: string;
  /** False for a bank that sends no payouts (an acquirer without a payout connector): payouts answer 403 before anything else. */
  readonly sendsPayouts: boolean;
  /** Metadata the bank attaches to a new payment (the simulator's plan); written with the payment. */
  describePayment(tx: Tx, p: NewPayment): Promise<Record<string, string>>;
  /** The payment's session opened (pending → processing): the bank starts taking the payment. */
  openSession(tx: Tx, req: SessionRequest): Promise<void>;
  /** A merchant-initiated charge of a saved method, whose session opened at creation. */
  chargeSaved(tx: Tx, req: SessionRequest & { tokenId: string }): Promise<void>;
  /** The merchant or buyer cancelled a payment; voids whatever the bank holds open for it. */
  cancel(tx: Tx, payment: PaymentRow): Promise<void>;
  /** A refund was created (pending): return the money to the payer. */
  refund(tx: Tx, refund: RefundRow, payment: PaymentRow): Promise<void>;
  /** Ask how an operation ended; the answer arrives through the domain's entry point like any other. */
  checkStatus(tx: Tx, op: OperationRef): Promise<void>;
  /** Send a payout (called before the payout is written, so a refusal creates nothing). */
  payout(tx: Tx, req: PayoutRequest): Promise<PayoutStart>;
  /**
   * Check a notification the bank posted to /v1/callbacks/{provider}/{shop_id}. Runs before, and outside, the
   * transaction that applies it: it may read committed data, never write.
   */
  callback(req: CallbackRequest): Promise<CallbackResult>;
  /** Extra fields of the payment creation response (the simulator's block in test mode). */
  creationExtras(payment: PaymentRow): Record<string, unknown> | undefined;
  /**
   * For a bank whose buyer pays on the bank's side: what the hosted page shows while the payment is
   * processing. undefined: the page's own screens take the buyer (the simulator), or nothing is sent anywhere.
   * Called outside any transaction (a GET of the page): it may read committed data.
   */
  pageSession(payment: PaymentRow): Promise<PageSession | undefined>;
}
