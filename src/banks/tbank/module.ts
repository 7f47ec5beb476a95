import type { Module } from '../../money/core/module';
import type { PaymentsCore } from '../../money/payments/core';
import { MasterKey } from '../../platform/secrets/master-key';
import { UrlPolicy } from '../../money/webhooks/url-safety';
import { TBankBank } from './bank';
import { refuseJob, requestJob } from './jobs';

/**
 * T-Bank acquiring as the wiring mounts it: the connector behind the port for live shops with a T-Bank
 * terminal, the job that sends each recorded request, and the one that refuses what cannot be sent.
 * Builds only (the master key is read on first use, not here). A terminal's api_url is called only at a
 * public address, or in a range the operator opened with --webhook-allow.
 */
export function tbankModule(core: PaymentsCore): Module {
  const key = new MasterKey(core.config.db);
  const bank = new TBankBank(core, key);
  return { name: 'tbank', banks: [bank], jobs: [requestJob(core, key, bank, new UrlPolicy(core.config.webhookAllow)), refuseJob(core)] };
}
