import type { Config } from '../../platform/config';
import type { Logger } from '../../platform/log';
import type { Store } from '../../platform/storage/store';
import type { Clocks } from '../../platform/clock';
import type { Scheduler } from '../../platform/queue/jobs';
import type { Events } from '../events/events';
import type { BankDirectory } from '../bank-port/directory';

/**
 * What every domain is built from (by `buildCore`, core/build.ts). It holds no domain service: a domain that needs
 * another's (payments' hooks) names it in a type of its own that extends Core, and the root hands it over.
 */
export interface Core {
  readonly config: Config;
  readonly log: Logger;
  readonly store: Store;
  readonly clocks: Clocks;
  readonly scheduler: Scheduler;
  readonly events: Events;
  /** Which bank each shop and mode reaches (the simulator in test mode; the shop's acquirer live). */
  readonly banks: BankDirectory;
  readonly version: string;
  /** Address of the API as clients reach it (known once listening). */
  readonly baseUrl: string;
  /** Address of the hosted payment page (the API's own unless configured). */
  readonly payPageUrl: string;
  /** True once shutdown began (long-lived handlers end themselves). */
  readonly closing: boolean;
}
