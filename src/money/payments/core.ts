import type { Core } from '../core/core';
import type { Tx } from '../../platform/storage/store';
import type { PaymentRow, PaymentStatus } from '../bank-port/payment';

/** The core with the hooks `move()` runs after a status change (PaymentHooks): whoever moves a payment takes this type. */
export interface PaymentsCore extends Core {
  readonly paymentHooks: PaymentHooks;
}

/**
 * A reaction to a payment's status change, in its transaction, once the change, its money and its event are written:
 * `payment` as the move left it, `from` the status it left, `at` the move's time on its clock. A throw rolls all back.
 */
export type PaymentMoved = (tx: Tx, payment: PaymentRow, from: PaymentStatus, at: number) => Promise<void>;

/** Which moves a hook is run for: payments of these kinds entering these statuses. */
export interface MovedFilter {
  kinds: readonly string[];
  statuses: readonly PaymentStatus[];
}

/** The typed hooks of the payments state machine: other domains react to payments here, never the other way. */
export class PaymentHooks {
  readonly moved: Array<{ fn: PaymentMoved; kinds: ReadonlySet<string>; statuses: ReadonlySet<string> }> = [];

  /** Run `fn` after every status change that `only` names, in the order added. */
  onMoved(fn: PaymentMoved, only: MovedFilter): void {
    this.moved.push({ fn, kinds: new Set(only.kinds), statuses: new Set(only.statuses) });
  }
}
