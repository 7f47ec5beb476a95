import type { Ctx, Reply } from '../../platform/http/types';
import type { Core } from '../../money/core/core';
import { esc } from '../pay-page/layout';
import { payoutsNeedingDecision } from '../../money/payouts/store';
import { allowListOf, literalRefusal } from '../../money/webhooks/url-safety';
import { payoutApiUrlChoices, removePayoutProvider, setPayoutProvider, showPayoutProvider } from './payout-provider';
import { field, postForm, table } from './layout';
import { ownShop, change } from './scope';
import { form } from './guard';
import { ct, when } from './text';
import { YOOKASSA } from '../../banks/yookassa/settings';

// The cabinet's half of a shop's payout provider: the same rule as `kopek shop payouts`, offering only the
// provider's published addresses (and the one the operator set); the secret key is never shown.

/** The shop's payout provider (never its secret) with the forms to set or remove it, and the card payouts waiting for a decision. */
export async function payoutProviderSection(ctx: Ctx<Core>, shopId: string, base: string): Promise<string> {
  const lang = ctx.cabinet!.lang;
  const p = await showPayoutProvider(ctx.app.store, shopId);
  const current = p
    ? `<dl class="facts" id="payout-provider"><dt>${esc(ct(lang, 'payout_provider'))}</dt><dd class="mono">${esc(p.provider)}</dd><dt>${esc(ct(lang, 'agent_id'))}</dt><dd class="mono">${esc(p.agent_id)}</dd><dt>API</dt><dd class="mono">${esc(p.api_url)}</dd></dl>
<div class="danger-zone">${postForm(ctx, `${base}/payout-provider/remove`, `<button class="btn danger" type="submit">${esc(ct(lang, 'remove_payout_provider'))}</button>`, { confirm: ct(lang, 'confirm') })}</div>`
    : `<p class="muted" id="payout-provider">${esc(ct(lang, 'payout_provider_none'))}</p>`;
  const setForm = postForm(
    ctx,
    `${base}/payout-provider`,
    `<input type="hidden" name="provider" value="${YOOKASSA}">
${field('po-agent', ct(lang, 'agent_id'), '<input id="po-agent" name="agent_id" required maxlength="64" autocomplete="off" spellcheck="false">')}
${field('po-secret', ct(lang, 'payout_secret'), '<input id="po-secret" name="secret" type="password" required maxlength="256" autocomplete="new-password">')}
${field('po-url', ct(lang, 'payout_api_url'), `<select id="po-url" name="api_url">${payoutApiUrlChoices(p?.api_url).map((u) => `<option value="${esc(u)}"${u === p?.api_url ? ' selected' : ''}>${esc(u)}</option>`).join('')}</select>`, ct(lang, 'payout_provider_hint'))}
<button class="btn" type="submit">${esc(ct(lang, 'set_payout_provider'))}</button>`,
  );
  const waiting = await payoutsNeedingDecision(ctx.app.store, shopId);
  const undecided = waiting.length
    ? `<p class="alert">${esc(ct(lang, 'payouts_undecided'))}</p>${table(
        [{ label: 'ID' }, { label: ct(lang, 'amount'), num: true }, { label: 'Card' }, { label: ct(lang, 'created') }],
        waiting.map((w) => [`<span class="mono">${esc(w.id)}</span>`, esc(String(w.amount)), esc(`*${w.card_last4 ?? ''}`), esc(when(w.created_at))]),
        '',
      )}`
    : '';
  return `<h2>${esc(ct(lang, 'payout_provider'))}</h2>
${current}
${undecided}
${setForm}`;
}

/**
 * POST /cabinet/shops/:id/payout-provider {provider, agent_id, secret, api_url?}: as `kopek shop payouts` does
 * (the credentials checked at the provider first); only the provider's published addresses, or the one the
 * operator set, and only an address the server may call (--webhook-allow for a private one).
 */
export async function postPayoutProvider(ctx: Ctx<Core>): Promise<Reply> {
  const s = await ownShop(ctx, ctx.params.id);
  const f = form(ctx);
  return change(ctx, { action: 'shop.payout_provider.set', target: s.id, back: `/cabinet/shops/${s.id}` }, async () => {
    const choices = payoutApiUrlChoices((await showPayoutProvider(ctx.app.store, s.id))?.api_url);
    const apiUrl = f.get('api_url') || undefined;
    const url = (apiUrl ?? choices[0]).replace(/\/+$/, '');
    if (choices.includes(url)) {
      const why = literalRefusal(new URL(url), allowListOf(ctx.app.config.webhookAllow));
      if (why) throw new Error(`cannot set the payout provider: the API address is the ${why}, which the server does not call (--webhook-allow)`);
    }
    const input = { provider: f.get('provider') || YOOKASSA, agentId: f.get('agent_id') ?? '', secret: f.get('secret') ?? '', apiUrl };
    const v = await setPayoutProvider(ctx.app.store, s.id, input, { now: ctx.app.clocks.real(), timeoutMs: ctx.app.config.acquirerTimeoutSeconds * 1000, choices });
    return `${v.provider} ${v.agent_id}`;
  });
}

/** POST /cabinet/shops/:id/payout-provider/remove: as `kopek shop payouts --remove` does. */
export async function postRemovePayoutProvider(ctx: Ctx<Core>): Promise<Reply> {
  const s = await ownShop(ctx, ctx.params.id);
  return change(ctx, { action: 'shop.payout_provider.remove', target: s.id, back: `/cabinet/shops/${s.id}` }, async () => ((await removePayoutProvider(ctx.app.store, s.id)) ? '' : '(none was set)'));
}
