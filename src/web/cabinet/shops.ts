import type { Ctx, Reply } from '../../platform/http/types';
import type { Core } from '../../money/core/core';
import { esc } from '../pay-page/render';
import { ALL_SCOPES } from '../../platform/auth/scopes';
import { activateLive, createShop, getMerchant, rotateSigningSecret, setIpAllowlist, setRequireSignature, setShopScopes } from '../../money/shops/store';
import { apiUrlChoices, removeAcquirer, setTBankAcquirer, showAcquirer } from '../../banks/tbank/settings';
import { payoutsNeedingDecision } from '../../money/payouts/store';
import { allowListOf, literalRefusal } from '../../money/webhooks/url-safety';
import { YOOKASSA, secretLabel, YOOKASSA_API_URLS } from '../../banks/yookassa/settings';
import { cabinetPage, checkboxes, createRefused, field, options, orRefused, postForm, shownOnce, table } from './layout';
import type { Lang } from '../pay-page/i18n';
import { audit, change, merchantShops, ownShop } from './scope';
import { form } from './sessions';
import { ct, when } from './text';
import type { Store } from '../../platform/storage/store';
import { putShopPayoutProvider, removeShopPayoutProvider, shopPayoutProvider, type ShopPayoutProvider } from '../../money/bank-port/store';
import { MasterKey } from '../../platform/secrets/at-rest';
import { checkYookassaCredentials } from '../../banks/yookassa/http';

/** GET /cabinet/shops: the merchant's shops and a form to create one. */
export async function shopsPage(ctx: Ctx<Core>): Promise<Reply> {
  const lang = ctx.cabinet!.lang;
  const shops = await merchantShops(ctx);
  const list = table(
    [{ label: ct(lang, 'name') }, { label: ct(lang, 'scopes') }, { label: ct(lang, 'ip_allowlist') }, { label: ct(lang, 'require_signature') }],
    shops.map((s) => [
      `<a href="/cabinet/shops/${esc(s.id)}">${esc(s.name)}</a>`,
      esc(s.scopes.split(',').filter(Boolean).length + ' / ' + ALL_SCOPES.length),
      esc(s.ip_allowlist || '—'),
      s.require_signature ? '✓' : '—',
    ]),
    ct(lang, 'nothing'),
  );
  const body = `<h1>${esc(ct(lang, 'shops'))}</h1>
${list}
<h2>${esc(ct(lang, 'create_shop'))}</h2>
${postForm(ctx, '/cabinet/shops', `<div class="inline">${field('s-name', ct(lang, 'name'), '<input id="s-name" name="name" required maxlength="200">')}<button class="btn" type="submit">${esc(ct(lang, 'create_shop'))}</button></div>`)}`;
  return cabinetPage(ctx, { title: ct(lang, 'shops'), active: 'shops', body });
}

/** POST /cabinet/shops {name}: a new shop of the user's merchant (all scopes), as `kopek shop create` makes it; its secrets are shown once. */
export async function postShop(ctx: Ctx<Core>): Promise<Reply> {
  const lang = ctx.cabinet!.lang;
  const shop = await orRefused(createShop(ctx.app.store, ctx.cabinet!.merchantId, form(ctx).get('name') ?? '', undefined, ctx.app.clocks.real()));
  if ('refused' in shop) return createRefused(ctx, 'shops', 'create_shop', shop.refused, '/cabinet/shops');
  await audit(ctx, 'shop.create', shop.id, shop.name);
  const shown = `${signingSecret(lang, shop.signing_secret)}
${field('sec-wh', 'Webhook secret (whs_)', `<output id="sec-wh" class="secret">${esc(shop.webhook_secret)}</output>`)}`;
  const note = `${ct(lang, 'saved')} ${ct(lang, 'shown_once')}`;
  return shownOnce(ctx, { title: shop.name, active: 'shops', h1: shop.name, note, shown, next: `/cabinet/shops/${shop.id}`, nextLabel: `${shop.name} →` });
}

function signingSecret(lang: Lang, secret: string): string {
  return field('sec-sign', ct(lang, 'signing_secret'), `<output id="sec-sign" class="secret">${esc(secret)}</output>`);
}

/** GET /cabinet/shops/:id: scopes, IP allow-list, request signing of a shop. */
export async function shopPage(ctx: Ctx<Core>): Promise<Reply> {
  const lang = ctx.cabinet!.lang;
  const s = await ownShop(ctx, ctx.params.id);
  const enabled = new Set(s.scopes.split(',').filter(Boolean));
  const base = `/cabinet/shops/${s.id}`;
  const scopes = checkboxes(ct(lang, 'scopes'), 'scope', ALL_SCOPES, (sc) => enabled.has(sc));
  const body = `<p><a href="/cabinet/shops">← ${esc(ct(lang, 'shops'))}</a></p>
<h1>${esc(s.name)}</h1>
<p class="muted mono">${esc(s.id)}</p>
<p><a href="/cabinet/keys?shop=${esc(s.id)}">${esc(ct(lang, 'keys'))}</a> · <a href="/cabinet/webhooks?shop=${esc(s.id)}">${esc(ct(lang, 'webhooks'))}</a> · <a href="/cabinet/test?shop=${esc(s.id)}">${esc(ct(lang, 'test_mode'))}</a></p>
<h2>${esc(ct(lang, 'scopes'))}</h2>
${postForm(ctx, `${base}/scopes`, `${scopes}<button class="btn" type="submit">${esc(ct(lang, 'save'))}</button>`)}
<h2>${esc(ct(lang, 'ip_allowlist'))}</h2>
${postForm(ctx, `${base}/ip-allowlist`, `<div class="inline">${field('ip', ct(lang, 'ip_allowlist'), `<input id="ip" name="ip_allowlist" value="${esc(s.ip_allowlist)}" aria-describedby="ip-hint" autocomplete="off" spellcheck="false">`, ct(lang, 'ip_hint'))}<button class="btn" type="submit">${esc(ct(lang, 'save'))}</button></div>`)}
<h2>${esc(ct(lang, 'signing_secret'))}</h2>
${postForm(ctx, `${base}/require-signature`, `<fieldset class="checks"><legend class="sr">${esc(ct(lang, 'require_signature'))}</legend><label><input type="checkbox" name="on" value="1"${s.require_signature ? ' checked' : ''}> ${esc(ct(lang, 'require_signature'))}</label></fieldset><button class="btn secondary" type="submit">${esc(ct(lang, 'save'))}</button>`)}
<div class="danger-zone">${postForm(ctx, `${base}/signing-secret`, `<button class="btn danger" type="submit">${esc(ct(lang, 'rotate'))}: ${esc(ct(lang, 'signing_secret'))}</button>`, { confirm: ct(lang, 'confirm') })}</div>
${await liveSection(ctx, s.id, base)}`;
  return cabinetPage(ctx, { title: s.name, active: 'shops', body });
}

/** The shop's acquirer (never its password) and payout provider (never its secret) with their forms, and the merchant's live activation. */
async function liveSection(ctx: Ctx<Core>, shopId: string, base: string): Promise<string> {
  const lang = ctx.cabinet!.lang;
  const a = await showAcquirer(ctx.app.store, shopId);
  const merchant = await getMerchant(ctx.app.store, ctx.cabinet!.merchantId);
  const current = a
    ? `<dl class="facts"><dt>${esc(ct(lang, 'terminal_key'))}</dt><dd class="mono">${esc(a.terminal_key)}</dd><dt>API</dt><dd class="mono">${esc(a.api_url)}</dd></dl>
<div class="danger-zone">${postForm(ctx, `${base}/acquirer/remove`, `<button class="btn danger" type="submit">${esc(ct(lang, 'remove_acquirer'))}</button>`, { confirm: ct(lang, 'confirm') })}</div>`
    : `<p class="muted">${esc(ct(lang, 'acquirer_none'))}</p>`;
  const setForm = postForm(
    ctx,
    `${base}/acquirer`,
    `${field('acq-key', ct(lang, 'terminal_key'), '<input id="acq-key" name="terminal_key" required maxlength="64" autocomplete="off" spellcheck="false">')}
${field('acq-pass', ct(lang, 'terminal_password'), '<input id="acq-pass" name="password" type="password" required maxlength="128" autocomplete="new-password">')}
${field('acq-url', ct(lang, 'api_url'), `<select id="acq-url" name="api_url">${options(apiUrlChoices(a?.api_url).map((u) => [u, u]), a?.api_url)}</select>`, ct(lang, 'acquirer_hint'))}
<button class="btn" type="submit">${esc(ct(lang, 'set_acquirer'))}</button>`,
  );
  const live = merchant?.live_enabled
    ? `<p class="ok">${esc(ct(lang, 'live_on'))}</p>`
    : `<p class="muted">${esc(ct(lang, 'live_is_off'))}</p>${postForm(ctx, '/cabinet/activate-live', `<input type="hidden" name="back" value="${esc(base)}"><button class="btn" type="submit">${esc(ct(lang, 'activate_live'))}</button>`)}`;
  return `<h2>${esc(ct(lang, 'acquirer'))}</h2>
${current}
${setForm}
${await payoutProviderSection(ctx, shopId, base)}
<h2>${esc(ct(lang, 'mode_live'))}</h2>
${live}`;
}

/** A change of one shop from its page's form, audited as `action` with what `fn` returns; back to the shop's page. */
function shopChange(action: string, fn: (ctx: Ctx<Core>, shopId: string, f: URLSearchParams) => Promise<string>): (ctx: Ctx<Core>) => Promise<Reply> {
  return async (ctx) => {
    const s = await ownShop(ctx, ctx.params.id);
    const f = form(ctx);
    return change(ctx, { action, target: s.id, back: `/cabinet/shops/${s.id}` }, () => fn(ctx, s.id, f));
  };
}

/** POST /cabinet/shops/:id/acquirer {terminal_key, password, api_url?}: as `kopek shop acquirer --provider tbank` does; the password is never shown again. */
export const postAcquirer = shopChange('shop.acquirer.set', async (ctx, id, f) => {
  // Only the bank's own addresses (or the one the operator set): a merchant cannot point kopek at any address.
  const choices = apiUrlChoices((await showAcquirer(ctx.app.store, id))?.api_url);
  const terminal = { terminalKey: f.get('terminal_key') ?? '', password: f.get('password') ?? '', apiUrl: f.get('api_url') || undefined };
  const v = await setTBankAcquirer(ctx.app.store, id, terminal, ctx.app.clocks.real(), choices);
  return `${v.provider} ${v.terminal_key}`;
});

/** POST /cabinet/shops/:id/acquirer/remove: as `kopek shop acquirer --remove` does. */
export const postRemoveAcquirer = shopChange('shop.acquirer.remove', async (ctx, id) => ((await removeAcquirer(ctx.app.store, id)) ? '' : '(none was set)'));

/** POST /cabinet/activate-live {back?}: the merchant's live mode, as `kopek merchant activate-live` does (a shop needs an acquirer or a payout provider). */
export function postActivateLive(ctx: Ctx<Core>): Promise<Reply> {
  const back = form(ctx).get('back') ?? '';
  const target = /^\/cabinet\/shops\/[0-9a-f-]{36}$/.test(back) ? back : '/cabinet/shops';
  return change(ctx, { action: 'merchant.activate_live', target: ctx.cabinet!.merchantId, back: target }, () => activateLive(ctx.app.store, ctx.cabinet!.merchantId));
}

/** POST /cabinet/shops/:id/scopes {scope…}: replaces the shop's scopes, as `kopek shop scopes` does. */
export const postScopes = shopChange('shop.scopes', async (ctx, id, f) => (await setShopScopes(ctx.app.store, id, f.getAll('scope').join(','))).join(',') || '(none)');

/** POST /cabinet/shops/:id/ip-allowlist {ip_allowlist}: as `kopek shop ip-allowlist` does. */
export const postAllowlist = shopChange('shop.ip_allowlist', async (ctx, id, f) => (await setIpAllowlist(ctx.app.store, id, f.get('ip_allowlist') ?? '')).join(',') || '(any address)');

/** POST /cabinet/shops/:id/require-signature {on?}: as `kopek shop require-signature` does. */
export const postRequireSignature = shopChange('shop.require_signature', async (ctx, id, f) => {
  const on = f.get('on') === '1';
  await setRequireSignature(ctx.app.store, id, on);
  return on ? 'on' : 'off';
});

/** POST /cabinet/shops/:id/signing-secret: rotates the thm_ secret (as `kopek shop signing-secret`); the new one is shown once, on this answer only. */
export async function postSigningSecret(ctx: Ctx<Core>): Promise<Reply> {
  const lang = ctx.cabinet!.lang;
  const s = await ownShop(ctx, ctx.params.id);
  const secret = await rotateSigningSecret(ctx.app.store, s.id);
  await audit(ctx, 'shop.signing_secret.rotate', s.id);
  const shown = signingSecret(lang, secret);
  return shownOnce(ctx, { title: s.name, active: 'shops', h1: s.name, note: ct(lang, 'shown_once'), shown, next: `/cabinet/shops/${s.id}` });
}

/** The shop's payout provider (never its secret) with the forms to set or remove it, and the card payouts waiting for a decision. */
async function payoutProviderSection(ctx: Ctx<Core>, shopId: string, base: string): Promise<string> {
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
${field('po-url', ct(lang, 'payout_api_url'), `<select id="po-url" name="api_url">${options(payoutApiUrlChoices(p?.api_url).map((u) => [u, u]), p?.api_url)}</select>`, ct(lang, 'payout_provider_hint'))}
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

// POST /cabinet/shops/:id/payout-provider {provider, agent_id, secret, api_url?}: as `kopek shop payouts` (credentials checked
// first); only the published addresses or the operator's, and only one the server may call (--webhook-allow for private).
export const postPayoutProvider = shopChange('shop.payout_provider.set', async (ctx, id, f) => {
  const choices = payoutApiUrlChoices((await showPayoutProvider(ctx.app.store, id))?.api_url);
  const apiUrl = f.get('api_url') || undefined;
  const url = (apiUrl ?? choices[0]).replace(/\/+$/, '');
  if (choices.includes(url)) {
    const why = literalRefusal(new URL(url), allowListOf(ctx.app.config.webhookAllow));
    if (why) throw new Error(`cannot set the payout provider: the API address is the ${why}, which the server does not call (--webhook-allow)`);
  }
  const input = { provider: f.get('provider') || YOOKASSA, agentId: f.get('agent_id') ?? '', secret: f.get('secret') ?? '', apiUrl };
  const v = await setPayoutProvider(ctx.app.store, id, input, { now: ctx.app.clocks.real(), timeoutMs: ctx.app.config.acquirerTimeoutSeconds * 1000, choices });
  return `${v.provider} ${v.agent_id}`;
});

/** POST /cabinet/shops/:id/payout-provider/remove: as `kopek shop payouts --remove` does. */
export const postRemovePayoutProvider = shopChange('shop.payout_provider.remove', async (ctx, id) => ((await removePayoutProvider(ctx.app.store, id)) ? '' : '(none was set)'));

/** What may be shown of a shop's payout provider: never its secret. */
type PayoutProviderView = Omit<ShopPayoutProvider, 'secret'>;

/** What setting a payout provider takes: the secret in clear (for the credentials check and sealing only). */
interface PayoutProviderInput {
  provider: string;
  agentId: string;
  secret: string;
  /** undefined: the provider's production address. */
  apiUrl?: string;
}

export async function showPayoutProvider(store: Store, shopId: string): Promise<PayoutProviderView | undefined> {
  const p = await shopPayoutProvider(store, shopId);
  return p && { shop_id: p.shop_id, provider: p.provider, agent_id: p.agent_id, api_url: p.api_url };
}

/** Checks and normalises a payout provider (one-line error); `choices` (the cabinet's): the only API addresses taken, else any http(s) (the operator's). */
export function checkPayoutProvider(p: PayoutProviderInput, choices?: readonly string[]): Required<PayoutProviderInput> {
  const fail = (why: string): Error => new Error(`cannot set the payout provider: ${why}`);
  if (p.provider !== YOOKASSA) throw fail(`--provider must be ${YOOKASSA}, got "${p.provider.slice(0, 32)}"`);
  const agentId = p.agentId.trim();
  if (!/^[A-Za-z0-9_.-]{1,64}$/.test(agentId)) throw fail('--agent-id must be 1 to 64 letters, digits, "_", "-" or "."');
  if (p.secret.length === 0 || p.secret.length > 256 || /[\r\n]/.test(p.secret)) {
    throw fail('the secret key file must hold the secret key on one line (1 to 256 characters)');
  }
  const url = (p.apiUrl ?? YOOKASSA_API_URLS[0]).trim().replace(/\/+$/, '');
  const parsed = URL.canParse(url) ? new URL(url) : undefined;
  if (!parsed || (parsed.protocol !== 'https:' && parsed.protocol !== 'http:')) throw fail(`--api-url must be an http(s) URL, got "${url.slice(0, 64)}"`);
  if (parsed.username || parsed.password) throw fail('--api-url must not carry credentials');
  if (choices && !choices.includes(url)) {
    throw fail(`the API address must be one of ${choices.join(', ')}, got "${url.slice(0, 64)}"; another address is set by the operator (kopek shop payouts --api-url)`);
  }
  return { provider: p.provider, agentId, secret: p.secret, apiUrl: url };
}

// Sets or replaces a shop's payout provider: parts checked, credentials checked at the provider by a request that changes
// nothing (refused: nothing written), then the row written, the secret sealed. `timeoutMs` bounds the check.
export async function setPayoutProvider(store: Store, shopId: string, input: PayoutProviderInput, o: { now: number; timeoutMs: number; choices?: readonly string[] }): Promise<PayoutProviderView> {
  const p = checkPayoutProvider(input, o.choices);
  const checked = await checkYookassaCredentials({ apiUrl: p.apiUrl, agentId: p.agentId, secret: p.secret, timeoutMs: o.timeoutMs });
  if (!checked.ok) throw new Error(`cannot set the payout provider: the credentials check failed: ${checked.reason}`);
  const secret = new MasterKey(store.path).encrypt(p.secret, secretLabel(shopId));
  const row: ShopPayoutProvider = { shop_id: shopId, provider: p.provider, agent_id: p.agentId, secret, api_url: p.apiUrl };
  await store.tx(async (tx) => putShopPayoutProvider(tx, row, o.now));
  return { shop_id: shopId, provider: p.provider, agent_id: p.agentId, api_url: p.apiUrl };
}

/** Remove a shop's payout provider; true when it had one (its live payouts then answer 403 payouts_not_configured). */
export async function removePayoutProvider(store: Store, shopId: string): Promise<boolean> {
  return store.tx(async (tx) => removeShopPayoutProvider(tx, shopId));
}

/** Addresses the cabinet offers: the provider's published ones, and the shop's current one if the operator set another. */
function payoutApiUrlChoices(currentUrl?: string): string[] {
  return currentUrl && !YOOKASSA_API_URLS.includes(currentUrl) ? [...YOOKASSA_API_URLS, currentUrl] : [...YOOKASSA_API_URLS];
}
