/** What the test bank will answer for a payment, decided at creation. */
export type SimOutcome = 'succeeded' | 'failed' | 'requires_action' | 'pending';

/** The simulator's plan for one payment: its outcome and, when it fails, the code the bank presents. */
export interface SimPlan {
  outcome: SimOutcome;
  /** Unified failure code for `failed`; "" otherwise. */
  failureCode: string;
}

/**
 * Magic amounts, by the kopeck part (amount % 100): 00 succeeds; 01 fails do_not_honor; 02 fails
 * insufficient_funds; 03 requires action (3-D Secure or bank confirmation); 04 stays pending at the bank
 * until the session ends; anything else succeeds.
 */
export function planForAmount(amount: number): SimPlan {
  switch (amount % 100) {
    case 1:
      return { outcome: 'failed', failureCode: 'do_not_honor' };
    case 2:
      return { outcome: 'failed', failureCode: 'insufficient_funds' };
    case 3:
      return { outcome: 'requires_action', failureCode: '' };
    case 4:
      return { outcome: 'pending', failureCode: '' };
    default:
      return { outcome: 'succeeded', failureCode: '' };
  }
}

/**
 * The test bank's payout plan by the kopeck part (decisions.md): 03, the payout router refuses it (nothing is
 * created); 01 and 02 fail after --sim-delay (do_not_honor, recipient_not_in_sbp); anything else succeeds.
 */
export function payoutPlanForAmount(amount: number): { outcome: 'refused' | 'failed' | 'succeeded'; failureCode: string | null } {
  switch (amount % 100) {
    case 3:
      return { outcome: 'refused', failureCode: 'router_error' };
    case 1:
      return { outcome: 'failed', failureCode: 'do_not_honor' };
    case 2:
      return { outcome: 'failed', failureCode: 'recipient_not_in_sbp' };
    default:
      return { outcome: 'succeeded', failureCode: null };
  }
}

/** How the test bank settles a refund: a refund whose own amount ends in 01 fails do_not_honor. */
export function refundOutcome(amount: number): { status: 'succeeded' | 'failed'; failureCode: string } {
  return amount % 100 === 1 ? { status: 'failed', failureCode: 'do_not_honor' } : { status: 'succeeded', failureCode: '' };
}

/** The plan recorded in a payment's metadata, if the payment is a test one. */
export function planFromMetadata(meta: Record<string, string>): SimPlan | null {
  const outcome = meta.simulator_outcome as SimOutcome | undefined;
  if (!outcome) return null;
  return { outcome, failureCode: meta.simulator_failure_code ?? '' };
}
