import type { Module } from '../core/module';
import { CHECK_JOBS } from '../bank-port/checks';
import type { PaymentsCore } from '../payments/core';
import { runRefundCheck } from './bank-answers';

/** The refund status check: a pending refund whose bank stayed silent is asked about again, at growing intervals. */
export function refundsModule(core: PaymentsCore): Module {
  return {
    name: 'refunds',
    jobs: [{ kind: CHECK_JOBS.refund, run: (tx, job) => runRefundCheck(core, tx, job) }],
  };
}
