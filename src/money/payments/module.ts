import type { Module } from '../core/module';
import { CHECK_JOBS } from '../bank-port/checks';
import type { PaymentsCore } from './core';
import { runPaymentCheck } from './bank-answers';
import { sweepJobs } from './sweeps';

/**
 * The payments domain as the wiring mounts it: the expiry jobs older databases may hold, the shops' link and
 * session sweeps, and the payment status check. Builds only; mountModules registers the jobs in this order.
 */
export function paymentsModule(core: PaymentsCore): Module {
  return {
    name: 'payments',
    jobs: [...sweepJobs(core), { kind: CHECK_JOBS.payment, run: (tx, job) => runPaymentCheck(core, tx, job) }],
  };
}
