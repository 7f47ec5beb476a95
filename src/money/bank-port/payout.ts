/** The payout methods and the scope each needs. */
export const PAYOUT_SCOPES = {
  payouts_sbp: 'api:payouts:sbp',
  payouts_card: 'api:payouts:card',
  payouts_account: 'api:payouts:account',
} as const;

export type PayoutMethod = keyof typeof PAYOUT_SCOPES;

/** Every payout method, in the order the docs list them. */
export const PAYOUT_METHODS = Object.keys(PAYOUT_SCOPES) as PayoutMethod[];
