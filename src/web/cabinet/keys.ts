import type { Ctx, Reply } from '../../platform/http/types';
import type { Core } from '../../money/core/core';
import { esc } from '../pay-page/render';
import { ALL_SCOPES } from '../../platform/auth/scopes';
import type { KeyUsage } from '../../platform/auth/authenticate';
import { createKey, listKeys, revokeKey } from '../../money/shops/store';
import { cabinetPage, checkboxes, createRefused, field, orRefused, postForm, shownOnce, table, tags } from './layout';
import { audit, change, chosenShop, ownShop, shopOfOwn, shopPicker } from './scope';
import { form } from './sessions';
import { ct, when, codeText } from './text';

/** GET /cabinet/keys?shop=: a shop's keys (prefix, mode, scopes, last use), create and revoke. */
export async function keysPage(ctx: Ctx<Core & { keyUsage: KeyUsage }>): Promise<Reply> {
  const lang = ctx.cabinet!.lang;
  const shop = await chosenShop(ctx);
  await ctx.app.keyUsage.flush();
  const keys = await listKeys(ctx.app.store, shop.id);
  const list = table(
    [{ label: ct(lang, 'prefix') }, { label: ct(lang, 'mode') }, { label: ct(lang, 'scopes') }, { label: ct(lang, 'created') }, { label: ct(lang, 'last_use') }, { label: ct(lang, 'status') }],
    keys.map((k) => [
      `<span class="mono nowrap">${esc(k.key_prefix)}…</span>`,
      esc(codeText(lang, k.mode)),
      tags(k.scopes.split(',').filter(Boolean)),
      esc(when(k.created_at)),
      esc(k.last_used_at === null ? ct(lang, 'never') : when(k.last_used_at)),
      k.revoked_at !== null
        ? `${esc(ct(lang, 'revoked'))} ${esc(when(k.revoked_at))}`
        : `${esc(ct(lang, 'active'))} ${postForm(ctx, `/cabinet/keys/${k.id}/revoke`, `<button class="chip" type="submit" aria-label="${esc(`${ct(lang, 'revoke')} ${k.key_prefix}`)}">${esc(ct(lang, 'revoke'))}</button>`, { confirm: ct(lang, 'confirm') })}`,
    ]),
    ct(lang, 'nothing'),
  );
  const enabled = new Set(shop.scopes.split(',').filter(Boolean));
  const scopes = checkboxes(ct(lang, 'scopes'), 'scope', ALL_SCOPES.filter((s) => enabled.has(s)), () => true);
  const body = `<h1>${esc(ct(lang, 'keys'))} · ${esc(shop.name)}</h1>
${await shopPicker(ctx, '/cabinet/keys', shop.id)}
${list}
<h2>${esc(ct(lang, 'create_key'))}</h2>
${postForm(
  ctx,
  '/cabinet/keys',
  `<input type="hidden" name="shop" value="${esc(shop.id)}">
${field('k-mode', ct(lang, 'mode'), `<select id="k-mode" name="mode"><option value="test">${esc(codeText(lang, 'test'))}</option><option value="live">${esc(codeText(lang, 'live'))}</option></select>`)}
${enabled.size ? scopes : ''}
<button class="btn" type="submit">${esc(ct(lang, 'create_key'))}</button>`,
)}`;
  return cabinetPage(ctx, { title: ct(lang, 'keys'), active: 'keys', body });
}

/** POST /cabinet/keys {shop, mode, scope…}: a new key, as `kopek key create` makes it; the full key is shown once, on this answer. */
export async function postKey(ctx: Ctx<Core>): Promise<Reply> {
  const lang = ctx.cabinet!.lang;
  const f = form(ctx);
  const shop = await ownShop(ctx, f.get('shop'));
  const mode = f.get('mode') === 'live' ? 'live' : 'test';
  const made = await orRefused(createKey(ctx.app.store, shop.id, mode, f.getAll('scope').join(','), ctx.app.clocks.real()));
  if ('refused' in made) return createRefused(ctx, 'keys', 'create_key', made.refused, `/cabinet/keys?shop=${shop.id}`);
  await audit(ctx, 'key.create', made.key.id, `${mode} ${made.key.key_prefix}… ${made.key.scopes}`);
  const shown = field('new-key', `${ct(lang, 'key')} (${codeText(lang, mode)})`, `<output id="new-key" class="secret">${esc(made.secret)}</output>`);
  const h1 = `${ct(lang, 'keys')} · ${shop.name}`;
  return shownOnce(ctx, { title: ct(lang, 'keys'), active: 'keys', h1, note: ct(lang, 'shown_once'), shown, next: `/cabinet/keys?shop=${shop.id}` });
}

/** POST /cabinet/keys/:id/revoke: as `kopek key revoke`; the API refuses the key from the next request. */
export async function postRevoke(ctx: Ctx<Core>): Promise<Reply> {
  const id = ctx.params.id;
  const row = await ctx.app.store.get<{ shop_id: string; key_prefix: string }>('SELECT shop_id, key_prefix FROM api_keys WHERE id = ?', id);
  const shop = await shopOfOwn(ctx, row?.shop_id, `Cannot find key "${id.slice(0, 64)}"`);
  return change(ctx, { action: 'key.revoke', target: id, back: `/cabinet/keys?shop=${shop.id}` }, async () => {
    await revokeKey(ctx.app.store, id, ctx.app.clocks.real());
    return `${row!.key_prefix}…`;
  });
}
