import type { Tx } from '../../platform/storage/store';
import type { Mode } from '../../platform/clock';
import type { PaymentRow } from './payment';
import type { RefundRow } from './refund';
import type { PayoutMethod } from './payout';

// The one seam between the domain and every bank, picked by app.banks per shop and mode. Methods taking a `tx` run
// in the domain's transaction and await nothing else (never the network): a networked bank records a job there and
// reports the answer after commit through the domain's entry point (*/bank-answers.ts), as callbacks do.

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
  /** The bank ended the session without paying (deadline passed, or voided there). */
  | { outcome: 'expired' | 'cancelled' }
  /** Timeout, connection error, 5xx, an answer that cannot be read: ask again later. */
  | { outcome: 'unknown'; reason: string };

export type MoneyAnswer =
  | { outcome: 'succeeded'; bankRef?: string }
  | { outcome: 'refused'; failureCode: string; bankCode: string }
  | { outcome: 'unknown'; reason: string };

/** Who opened a payment's session: the buyer on the hosted page, or the service (a saved method, a test helper). */
export type Opener = 'buyer' | 'service';

/** A payment that has just moved to processing. */
export interface SessionRequest {
  payment: PaymentRow;
  by: Opener;
}

/** What the bank may attach to a payment about to be created (the simulator's plan). */
export interface NewPayment {
  shopId: string;
  mode: Mode;
  amount: number;
  /** payment when absent. */
  kind?: string;
  tokenId?: string;
}

/** Before anything is written. */
export interface PayoutRequest {
  id: string;
  shopId: string;
  mode: Mode;
  amount: number;
  method: PayoutMethod;
  bankId?: string;
  /** +7XXXXXXXXXX and the 12-digit member id for payouts_sbp; the full card number for payouts_card, in memory only. */
  recipient: { phone?: string; bankId?: string; cardNumber?: string };
  description?: string;
  at: number;
}

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

export type OperationRef = { kind: 'payment'; payment: PaymentRow } | { kind: 'refund'; refund: RefundRow } | { kind: 'payout'; payoutId: string };

export interface CallbackRequest {
  shopId: string;
  headers: Record<string, string | string[] | undefined>;
  body: unknown;
}

/** A notification checked by the bank: answers to apply, and the reply it expects. */
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

/** What the hosted page shows for a processing payment: the bank's page, an SBP QR payload, or `waiting`. */
export type PageSession = { kind: 'redirect'; url: string } | { kind: 'qr'; payload: string } | { kind: 'waiting' };

export interface BankPort {
  /** As shops name their acquirer ("simulator", "tbank", ...). */
  readonly provider: string;
  /** False: payouts answer 403 before anything else. */
  readonly sendsPayouts: boolean;
  /** Written with the payment. */
  describePayment(tx: Tx, p: NewPayment): Promise<Record<string, string>>;
  /** pending → processing: the bank starts taking the payment. */
  openSession(tx: Tx, req: SessionRequest): Promise<void>;
  /** A merchant-initiated charge of a saved method, whose session opened at creation. */
  chargeSaved(tx: Tx, req: SessionRequest & { tokenId: string }): Promise<void>;
  /** Voids whatever the bank holds open for the payment. */
  cancel(tx: Tx, payment: PaymentRow): Promise<void>;
  refund(tx: Tx, refund: RefundRow, payment: PaymentRow): Promise<void>;
  /** The answer arrives through the domain's entry point like any other. */
  checkStatus(tx: Tx, op: OperationRef): Promise<void>;
  /** Called before the payout is written, so a refusal creates nothing. */
  payout(tx: Tx, req: PayoutRequest): Promise<PayoutStart>;
  /** Runs before, and outside, the transaction that applies it: may read committed data, never write. */
  callback(req: CallbackRequest): Promise<CallbackResult>;
  /** The simulator's block in test mode. */
  creationExtras(payment: PaymentRow): Record<string, unknown> | undefined;
  /** For the hosted page, outside any transaction; undefined: the page's own screens (the simulator) or nothing. */
  pageSession(payment: PaymentRow): Promise<PageSession | undefined>;
}
