import type { Tx } from '../../platform/storage/store';
import type { Module, ModuleJob } from '../../money/core/module';
import type { PaymentsCore } from '../../money/payments/core';
import type { AsyncJobKind } from '../../platform/queue/jobs';
import { UrlPolicy, type Resolved } from '../../money/webhooks/url-safety';
import { shopPayoutProvider } from '../../money/bank-port/store';
import { recordMismatch } from '../../money/bank-port/checks';
import { payoutAnswered } from '../../money/payouts/bank-answers';
import { getPayout, type PayoutRow } from '../../money/payouts/store';
import { callYookassa, type Sent } from './http';
import { answerOf, isCardBody, payoutObjectOf, withCardNumber } from './protocol';
import { putPayoutRef, type YookassaRequestRow } from './records';
import { getRequest, JOB_MARGIN_MS, markAnswered, sendRecorded } from '../http-call';
import { REQUEST_JOB, YookassaBank, type Purpose } from './bank';
import { gatewayOf, YOOKASSA } from './settings';

/** What a run gave: the call's outcome, or `lost` (a card payout's number is gone: nothing was sent). */
type Outcome = Sent | { kind: 'lost' };

// `run` puts a card payout's number back from memory, unseals the secret key and sends the request once (sendRecorded: one
// found sent already is repeated by a status check under the same Idempotence-Key); `complete` applies the answer.
export function requestJob(core: PaymentsCore, bank: YookassaBank, policy: UrlPolicy): ModuleJob {
  const timeoutMs = Math.max(1, Math.round(core.config.acquirerTimeoutSeconds * 1000));
  const { store, clocks, log } = core;
  const context = { store, clocks, log, policy, provider: YOOKASSA, bank: 'YooKassa', who: 'provider' };
  const spec: AsyncJobKind<Outcome> = {
    deadline_ms: timeoutMs + JOB_MARGIN_MS,
    run: (job) => sendRecorded<YookassaRequestRow, Outcome>(context, Number(job.subject_id), async (row) => {
      const pp = await shopPayoutProvider(core.store, row.shop_id);
      if (!pp || pp.provider !== YOOKASSA) return { kind: 'unknown', reason: 'the shop has no YooKassa payout provider any more' };
      const post = row.operation === 'CreatePayout';
      let body = post ? (JSON.parse(row.request) as Record<string, unknown>) : undefined;
      if (body && isCardBody(body)) {
        const number = bank.cards.get(row.subject_id);
        if (!number) return { kind: 'lost' };
        body = withCardNumber(body, number);
      }
      let gw: ReturnType<typeof gatewayOf>;
      try {
        gw = gatewayOf(core.store.path, pp);
      } catch (err) {
        return { kind: 'unknown', reason: `cannot unseal the secret key: ${(err as Error).message}` };
      }
      const url = post ? `${gw.apiUrl}/payouts` : `${gw.apiUrl}/payouts/${encodeURIComponent(row.bank_payment_id)}`;
      const call = async (resolved: Resolved): Promise<Sent> => {
        const { agentId, secret } = gw;
        const sent = await callYookassa({ method: post ? 'POST' : 'GET', url, agentId, secret, idempotenceKey: row.order_id, body, timeoutMs, resolved });
        const outcome = sent.kind === 'answer' ? `HTTP ${sent.status} ${String(sent.body.status ?? sent.body.code ?? '')}` : `unknown: ${sent.reason}`;
        core.log.info('YooKassa request', { operation: row.operation, shop_id: row.shop_id, payout_id: row.subject_id, outcome });
        return sent;
      };
      return { kind: 'call', url, call };
    }),
    async complete(tx, job, out) {
      const row = await getRequest<YookassaRequestRow>(tx, Number(job.subject_id), YOOKASSA);
      const p = row && (await getPayout(tx, row.subject_id));
      if (!row || !p || p.shop_id !== row.shop_id || p.mode !== 'live') return;
      await onOutcome(core, bank, tx, row, p, String(job.payload.purpose ?? 'check') as Purpose, out);
    },
  };
  return { kind: REQUEST_JOB, async: spec };
}

async function onOutcome(core: PaymentsCore, bank: YookassaBank, tx: Tx, row: YookassaRequestRow, p: PayoutRow, purpose: Purpose, out: Outcome): Promise<void> {
  const now = core.clocks.real();
  if (out.kind === 'lost') {
    await markAnswered(tx, row.id, 'unknown', JSON.stringify({ reason: 'the card number was lost with a restart; not sent' }), '', now);
    core.log.warn('YooKassa card payout needs a decision: its number was lost before it was sent', { shop_id: p.shop_id, payout_id: p.id });
    return;
  }
  if (out.kind === 'unknown') {
    await markAnswered(tx, row.id, 'unknown', JSON.stringify({ reason: out.reason }), '', now);
    // A notification's GET that failed changes nothing: the payout's own checks go on.
    if (purpose !== 'notified') await payoutAnswered(core, tx, p.id, { outcome: 'unknown', reason: out.reason });
    return;
  }
  const po = out.status < 300 ? payoutObjectOf(out.body) : undefined;
  await markAnswered(tx, row.id, 'answered', JSON.stringify(out.body), po?.id ?? '', now);
  if (!po) {
    if (out.status < 300 || purpose === 'notified') {
      if (purpose !== 'notified') await payoutAnswered(core, tx, p.id, { outcome: 'unknown', reason: `HTTP ${out.status} without a payout` });
      return;
    }
    const code = typeof out.body.code === 'string' ? out.body.code.slice(0, 64) : `http_${out.status}`;
    // Only the first POST's refusal fails the payout: a repeat's may follow a first that paid.
    if (purpose === 'send' && row.operation === 'CreatePayout') {
      bank.cards.delete(p.id);
      await payoutAnswered(core, tx, p.id, { outcome: 'refused', failureCode: 'processing_error', bankCode: code });
    } else await payoutAnswered(core, tx, p.id, { outcome: 'unknown', reason: `HTTP ${out.status} ${code}` });
    return;
  }
  // A POST answers its Idempotence-Key's payout, a GET a known id's; a notification's GET of one with no id yet must name it in metadata.
  const named = po.payoutId ? po.payoutId === p.id : purpose !== 'notified' || p.bank_ref === po.id;
  if (!named || (p.bank_ref && p.bank_ref !== po.id)) {
    core.log.warn('YooKassa answer names another payout; not applied', { shop_id: p.shop_id, payout_id: p.id });
    return;
  }
  if (po.amount !== p.amount) {
    await recordMismatch(core.clocks, tx, { shopId: p.shop_id, subjectId: p.id, expected: p.amount, told: po.amount ?? -1, outcome: `${po.status} (YooKassa ${po.id})` });
    return;
  }
  bank.cards.delete(p.id);
  await putPayoutRef(tx, p.id, po.id);
  await payoutAnswered(core, tx, p.id, answerOf(po));
}

// YooKassa Payouts as the wiring mounts it: the connector and its request job; builds only (the master key is read on first
// use). The provider's api_url is called only at a public address or in a --webhook-allow range.
export function yookassaModule(core: PaymentsCore): Module {
  const bank = new YookassaBank(core);
  return { name: 'yookassa', banks: [bank], jobs: [requestJob(core, bank, new UrlPolicy(core.config.webhookAllow))] };
}
