import type { Store } from '../../platform/storage/store';
import { putShopPayoutProvider, removeShopPayoutProvider, shopPayoutProvider, type ShopPayoutProvider } from '../../money/bank-port/store';
import { MasterKey } from '../../platform/secrets/at-rest';
import { checkYookassaCredentials } from '../../banks/yookassa/http';
import { secretLabel, YOOKASSA, YOOKASSA_API_URLS } from '../../banks/yookassa/settings';

// A shop's payout provider, independent of its acquirer, as `kopek shop payouts` and the cabinet set it; the secret is sealed.

/** What may be shown of a shop's payout provider: never its secret. */
type PayoutProviderView = Omit<ShopPayoutProvider, 'secret'>;

const PAYOUT_PROVIDERS: readonly string[] = [YOOKASSA];

/** What setting a payout provider takes: the secret in clear (for the credentials check and sealing only). */
interface PayoutProviderInput {
  provider: string;
  agentId: string;
  secret: string;
  /** undefined: the provider's production address. */
  apiUrl?: string;
}

function payoutProviderView(p: ShopPayoutProvider): PayoutProviderView {
  return { shop_id: p.shop_id, provider: p.provider, agent_id: p.agent_id, api_url: p.api_url };
}

export async function showPayoutProvider(store: Store, shopId: string): Promise<PayoutProviderView | undefined> {
  const p = await shopPayoutProvider(store, shopId);
  return p ? payoutProviderView(p) : undefined;
}

/** Checks and normalises a payout provider (one-line error); `choices` (the cabinet's): the only API addresses taken, else any http(s) (the operator's). */
export function checkPayoutProvider(p: PayoutProviderInput, choices?: readonly string[]): Required<PayoutProviderInput> {
  const fail = (why: string): Error => new Error(`cannot set the payout provider: ${why}`);
  if (!PAYOUT_PROVIDERS.includes(p.provider)) throw fail(`--provider must be ${PAYOUT_PROVIDERS.join(' or ')}, got "${p.provider.slice(0, 32)}"`);
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
  return payoutProviderView(row);
}

/** Remove a shop's payout provider; true when it had one (its live payouts then answer 403 payouts_not_configured). */
export async function removePayoutProvider(store: Store, shopId: string): Promise<boolean> {
  return store.tx(async (tx) => removeShopPayoutProvider(tx, shopId));
}

/** Addresses the cabinet offers: the provider's published ones, and the shop's current one if the operator set another. */
export function payoutApiUrlChoices(currentUrl?: string): string[] {
  return currentUrl && !YOOKASSA_API_URLS.includes(currentUrl) ? [...YOOKASSA_API_URLS, currentUrl] : [...YOOKASSA_API_URLS];
}
