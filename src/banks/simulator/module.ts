import type { Module } from '../../money/core/module';
import type { PaymentsCore } from '../../money/payments/core';
import { SimulatorBank } from './test-bank';
import { paymentResolveJob } from './payments';
import { refundSettleJob } from './refunds';
import { payoutSettleJob } from './payouts';

/**
 * The test bank as the wiring mounts it: the bank behind the port for every test-mode operation, and the
 * jobs through which it answers after --sim-delay (a payment's session, a refund, a payout). Builds only.
 */
export function simulatorModule(core: PaymentsCore): Module {
  return {
    name: 'simulator',
    banks: [new SimulatorBank(core)],
    jobs: [paymentResolveJob(core), refundSettleJob(core), payoutSettleJob(core)],
  };
}
