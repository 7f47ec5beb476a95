import type { Module } from '../../money/core/module';
import type { PaymentsCore } from '../../money/payments/core';
import { UrlPolicy } from '../../money/webhooks/url-safety';
import { YookassaBank } from './bank';
import { requestJob } from './jobs';

/**
 * YooKassa Payouts as the wiring mounts it: the connector behind the port for the payouts of live shops whose
 * payout provider it is, and the job that sends each recorded request. Builds only (the master key is read on
 * first use). The provider's api_url is called only at a public address, or in a range the operator opened
 * with --webhook-allow.
 */
export function yookassaModule(core: PaymentsCore): Module {
  const bank = new YookassaBank(core);
  return { name: 'yookassa', banks: [bank], jobs: [requestJob(core, bank, new UrlPolicy(core.config.webhookAllow))] };
}
