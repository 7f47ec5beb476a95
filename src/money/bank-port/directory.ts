import type { Mode } from '../../platform/clock';
import type { Reader } from '../../platform/storage/store';
import type { BankPort } from './port';
import { shopAcquirer, shopPayoutProvider } from './store';

/** The provider every test-mode operation goes to. */
export const TEST_PROVIDER = 'simulator';
/** A live shop with no acquirer: nothing is sent anywhere. */
export const NO_PROVIDER = 'none';

/** Which bank a shop and mode reach, decided here only; banks register by provider at start-up. */
export class BankDirectory {
  private readonly ports = new Map<string, BankPort>();

  /** A name registered twice is a start-up error. */
  register(port: BankPort): void {
    if (this.ports.has(port.provider)) throw new Error(`cannot register bank "${port.provider}": it is registered already`);
    this.ports.set(port.provider, port);
  }

  byProvider(provider: string): BankPort | undefined {
    return this.ports.get(provider);
  }

  async providerFor(q: Reader, shopId: string, mode: Mode): Promise<string> {
    return mode === 'test' ? TEST_PROVIDER : ((await shopAcquirer(q, shopId))?.provider ?? NO_PROVIDER);
  }

  /** Test: the simulator, read nothing; live: the shop's acquirer (shop_acquirers), or no bank. */
  for(q: Reader, shopId: string, mode: Mode): Promise<BankPort> {
    const simulator = mode === 'test' && this.ports.get(TEST_PROVIDER);
    if (simulator) return Promise.resolve(simulator);
    return this.providerFor(q, shopId, mode).then((provider) => this.port(shopId, provider));
  }

  /** Test: the simulator; live: the shop's payout provider, else its acquirer when that sends payouts, else no bank. */
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
