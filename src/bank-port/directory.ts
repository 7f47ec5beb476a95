import type { Mode } from '../scheduler/clock';
import type { Store } from '../db/store';
import type { BankPort } from './port';
import { shopAcquirer } from './store';

/** The provider every test-mode operation goes to. */
export const TEST_PROVIDER = 'simulator';
/** The provider of a live shop with no acquirer configured: nothing is sent anywhere. */
export const NO_PROVIDER = 'none';

/**
 * Which bank a shop and mode talk to, decided here and nowhere else: test mode always reaches the
 * simulator; live mode reaches the provider of the shop's acquirer (table shop_acquirers), or no bank.
 * Banks are registered by provider name at start-up (app.ts), the simulator and every acquirer alike.
 */
export class BankDirectory {
  private readonly ports = new Map<string, BankPort>();

  constructor(private readonly store: Store) {}

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
  providerFor(shopId: string, mode: Mode): string {
    if (mode === 'test') return TEST_PROVIDER;
    return shopAcquirer(this.store, shopId)?.provider ?? NO_PROVIDER;
  }

  /** The bank for a shop and mode. */
  for(shopId: string, mode: Mode): BankPort {
    const provider = this.providerFor(shopId, mode);
    const port = this.ports.get(provider);
    if (!port) throw new Error(`cannot reach bank "${provider}" of shop "${shopId}": no such bank is registered`);
    return port;
  }
}
