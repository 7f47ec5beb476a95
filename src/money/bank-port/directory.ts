import type { Mode } from '../../platform/clock';
import type { Reader } from '../../platform/storage/store';
import type { BankPort } from './port';
import { shopAcquirer, shopPayoutProvider } from './store';

/** The provider every test-mode operation goes to. */
export const TEST_PROVIDER = 'simulator';
/** The provider of a live shop with no acquirer configured: nothing is sent anywhere. */
export const NO_PROVIDER = 'none';

/**
 * Which bank a shop and mode talk to, decided here and nowhere else: test mode always reaches the
 * simulator; live mode reaches the provider of the shop's acquirer (table shop_acquirers), or no bank.
 * Banks are registered by provider name at start-up (app.ts), the simulator and every acquirer alike.
 * The acquirer is read through the Reader the caller passes: inside a transaction body, its `tx`.
 */
export class BankDirectory {
  private readonly ports = new Map<string, BankPort>();

  /** Register a bank under its provider name; a name registered twice is a start-up error. */
  register(port: BankPort): void {
    if (this.ports.has(port.provider)) throw new Error(`cannot register bank "${port.provider}": it is registered already`);
    this.ports.set(port.provider, port);
  }

  /** The bank registered under `provider`, if any. */
  byProvider(provider: string): BankPort | undefined {
    return this.ports.get(provider);
  }

  /** The provider a shop's operations of this mode go to. */
  async providerFor(q: Reader, shopId: string, mode: Mode): Promise<string> {
    return mode === 'test' ? TEST_PROVIDER : ((await shopAcquirer(q, shopId))?.provider ?? NO_PROVIDER);
  }

  /** The bank for a shop and mode (live: one read of the shop's acquirer). */
  async for(q: Reader, shopId: string, mode: Mode): Promise<BankPort> {
    return this.port(shopId, await this.providerFor(q, shopId, mode));
  }

  /**
   * The bank a shop's payouts of this mode go to (creation and status checks): test mode, the simulator; live,
   * the bank registered under the shop's payout provider (shop_payout_providers), else its acquirer's bank when
   * that bank sends payouts itself, else the no-bank port, which sends none (payouts answer 403
   * payouts_not_configured). Independent of the acquirer: a shop may have either, or both.
   */
  async forPayout(q: Reader, shopId: string, mode: Mode): Promise<BankPort> {
    if (mode === 'test') return this.port(shopId, TEST_PROVIDER);
    const provider = await shopPayoutProvider(q, shopId);
    if (provider) {
      const port = this.ports.get(provider.provider);
      if (!port) throw new Error(`cannot reach payout provider "${provider.provider}" of shop "${shopId}": no such bank is registered`);
      return port;
    }
    const acquiring = await this.for(q, shopId, mode);
    return acquiring.sendsPayouts ? acquiring : this.port(shopId, NO_PROVIDER);
  }

  private port(shopId: string, provider: string): BankPort {
    const port = this.ports.get(provider);
    if (!port) throw new Error(`cannot reach bank "${provider}" of shop "${shopId}": no such bank is registered`);
    return port;
  }
}
