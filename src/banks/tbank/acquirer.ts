import type { Store } from '../../platform/storage/store';
import { putShopAcquirer, removeShopAcquirer, shopAcquirer, type ShopAcquirer } from '../../money/bank-port/store';
import { MasterKey } from '../../platform/secrets/master-key';
import { checkTerminal, readSettings, tbankAcquirer } from './settings';

/** What may be shown of a shop's acquirer: never its password. */
export interface AcquirerView {
  shop_id: string;
  provider: string;
  terminal_key: string;
  api_url: string;
}

/** The view of an acquirer row. */
export function acquirerView(a: ShopAcquirer): AcquirerView {
  const s = readSettings(a);
  return { shop_id: a.shop_id, provider: a.provider, terminal_key: s.terminal_key, api_url: s.api_url };
}

/** A shop's acquirer as it may be shown, or undefined when none is set. */
export async function showAcquirer(store: Store, shopId: string): Promise<AcquirerView | undefined> {
  const a = await shopAcquirer(store, shopId);
  return a ? acquirerView(a) : undefined;
}

/**
 * Set (or replace) a shop's T-Bank terminal, its password encrypted under the database's master key: the
 * one rule `kopek shop acquirer` and the cabinet share. `choices`: the only API addresses taken (the
 * cabinet's, apiUrlChoices); without it any http(s) address is (the operator's command). Throws a one-line
 * error on a bad terminal.
 */
export async function setTBankAcquirer(store: Store, shopId: string, t: { terminalKey: string; password: string; apiUrl?: string }, now: number, choices?: readonly string[]): Promise<AcquirerView> {
  const checked = checkTerminal(t.terminalKey, t.password, t.apiUrl, choices);
  const row = tbankAcquirer(new MasterKey(store.path), shopId, checked, now);
  await store.tx(async (tx) => putShopAcquirer(tx, row));
  return acquirerView(row);
}

/** Remove a shop's acquirer; true when it had one (its live keys then answer 403 acquirer_not_configured). */
export async function removeAcquirer(store: Store, shopId: string): Promise<boolean> {
  return store.tx(async (tx) => removeShopAcquirer(tx, shopId));
}
