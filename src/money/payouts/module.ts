import type { Core } from '../core/core';
import type { Module } from '../core/module';
import { CHECK_JOBS } from '../bank-port/checks';
import { runPayoutCheck } from './bank-answers';

/** The payout status check: a pending payout whose bank stayed silent is asked about again, at growing intervals. */
export function payoutsModule(core: Core): Module {
  return {
    name: 'payouts',
    jobs: [{ kind: CHECK_JOBS.payout, run: (tx, job) => runPayoutCheck(core, tx, job) }],
  };
}
