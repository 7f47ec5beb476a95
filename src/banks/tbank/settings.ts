import type { Store } from '../../platform/storage/store';
import { MasterKey } from '../../platform/secrets/at-rest';
import { putShopAcquirer, removeShopAcquirer, shopAcquirer, type ShopAcquirer } from '../../money/bank-port/store';
import { TBANK, TBANK_API_URL, TBANK_KNOWN_API_URLS } from './protocol';

/** A shop's T-Bank terminal as kept in shop_acquirers.settings: the password only encrypted. */
export interface TBankSettings {
  terminal_key: string;
  /** The terminal password, encrypted under the master key (bound to the shop). */
  password_enc: string;
  api_url: string;
}

/** A terminal with its password in clear, for one request; never stored or logged. */
type TBankTerminal = { terminalKey: string; password: string; apiUrl: string };

/** The encryption context of a shop's terminal password: a ciphertext moved to another shop does not decrypt. */
function passwordContext(shopId: string): string {
  return `tbank.password:${shopId}`;
}

export function tbankAcquirer(key: MasterKey, shopId: string, t: TBankTerminal, now: number): ShopAcquirer {
  const settings: TBankSettings = { terminal_key: t.terminalKey, password_enc: key.encrypt(t.password, passwordContext(shopId)), api_url: t.apiUrl };
  return { shop_id: shopId, provider: TBANK, settings: JSON.stringify(settings), updated_at: now };
}

/** Addresses the cabinet offers: the published ones, and the shop's current one if the operator set another. */
export function apiUrlChoices(currentUrl?: string): string[] {
  return currentUrl && !TBANK_KNOWN_API_URLS.includes(currentUrl) ? [...TBANK_KNOWN_API_URLS, currentUrl] : [...TBANK_KNOWN_API_URLS];
}

export function readSettings(a: ShopAcquirer): TBankSettings {
  const s = JSON.parse(a.settings) as Partial<TBankSettings>;
  return { terminal_key: String(s.terminal_key ?? ''), password_enc: String(s.password_enc ?? ''), api_url: String(s.api_url ?? TBANK_API_URL) };
}

export function terminalOf(key: MasterKey, a: ShopAcquirer): TBankTerminal {
  const s = readSettings(a);
  return { terminalKey: s.terminal_key, password: key.decrypt(s.password_enc, passwordContext(a.shop_id)), apiUrl: s.api_url };
}

/** What may be shown of a shop's acquirer: never its password. */
type AcquirerView = { shop_id: string; provider: string; terminal_key: string; api_url: string };

function acquirerView(a: ShopAcquirer): AcquirerView {
  const s = readSettings(a);
  return { shop_id: a.shop_id, provider: a.provider, terminal_key: s.terminal_key, api_url: s.api_url };
}

export async function showAcquirer(store: Store, shopId: string): Promise<AcquirerView | undefined> {
  const a = await shopAcquirer(store, shopId);
  return a ? acquirerView(a) : undefined;
}

// Sets or replaces a shop's T-Bank terminal, password encrypted: the rule `kopek shop acquirer` and the cabinet share.
// `choices`: the only API addresses taken (the cabinet's); without it any http(s) address is. Throws a one-line error.
export async function setTBankAcquirer(store: Store, shopId: string, t: { terminalKey: string; password: string; apiUrl?: string }, now: number, choices?: readonly string[]): Promise<AcquirerView> {
  const terminalKey = t.terminalKey.trim();
  if (!/^[A-Za-z0-9_.-]{1,64}$/.test(terminalKey)) throw new Error('cannot set the acquirer: --terminal-key must be 1 to 64 letters, digits, "_", "-" or "."');
  if (t.password.length === 0 || t.password.length > 256 || /[\r\n]/.test(t.password)) {
    throw new Error('cannot set the acquirer: the password file must hold the password on one line (1 to 256 characters)');
  }
  const apiUrl = (t.apiUrl ?? TBANK_API_URL).replace(/\/+$/, '');
  const protocol = URL.canParse(apiUrl) ? new URL(apiUrl).protocol : '';
  if (protocol !== 'https:' && protocol !== 'http:') throw new Error(`cannot set the acquirer: --api-url must be an http(s) URL, got "${apiUrl}"`);
  if (choices && !choices.includes(apiUrl)) {
    throw new Error(`cannot set the acquirer: the API address must be one of ${choices.join(', ')}, got "${apiUrl.slice(0, 64)}"; another address is set by the operator (kopek shop acquirer --api-url)`);
  }
  const row = tbankAcquirer(new MasterKey(store.path), shopId, { terminalKey, password: t.password, apiUrl }, now);
  await store.tx(async (tx) => putShopAcquirer(tx, row));
  return acquirerView(row);
}

/** Remove a shop's acquirer; true when it had one (its live keys then answer 403 acquirer_not_configured). */
export async function removeAcquirer(store: Store, shopId: string): Promise<boolean> {
  return store.tx(async (tx) => removeShopAcquirer(tx, shopId));
}
