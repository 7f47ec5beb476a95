import type { AddressInfo } from 'node:net';
import type { Config } from '../../platform/config';
import type { Logger } from '../../platform/log';
import { VERSION } from '../../platform/version';
import type { Store } from '../../platform/storage/store';
import { Clocks } from '../../platform/clock';
import { Scheduler } from '../../platform/queue/jobs';
import { Events } from '../events/events';
import { BankDirectory } from '../bank-port/directory';
import type { Core } from './core';

/** A built core and the switches only the wiring holds: the address once listening, the start of shutdown. */
export interface CoreControl {
  core: Core;
  /** The server listens at `address`: baseUrl holds its port from now on. */
  listening(address: AddressInfo): void;
  /** Shutdown began: `core.closing` is true from now on. */
  beginClose(): void;
}

/** The core on an open store, with an empty bank directory. Starts nothing. */
export function buildCore(config: Config, store: Store, log: Logger, realNow?: () => number): CoreControl {
  // Real time is the database's: on PostgreSQL every node's leases and lockouts then compare on one clock.
  const clocks = new Clocks(realNow ?? store.now);
  const scheduler = new Scheduler(store, clocks, log, { leaseMs: Math.round(config.jobLeaseSeconds * 1000) });
  // Set once here and once listening (the port is known then), not computed at each read.
  const urls = (port: number): Pick<Core, 'baseUrl' | 'payPageUrl'> => {
    const baseUrl = config.baseUrl ?? `http://${hostForUrl(config.host)}:${port}`;
    return { baseUrl, payPageUrl: config.payPageUrl ?? baseUrl };
  };
  const core: Mutable<Core> = {
    config,
    log,
    store,
    clocks,
    scheduler,
    events: new Events(store.eventFeed),
    banks: new BankDirectory(),
    version: VERSION,
    ...urls(config.port),
    closing: false,
  };
  return {
    core,
    listening: (a) => Object.assign(core, urls(a.port)),
    beginClose: () => {
      core.closing = true;
    },
  };
}

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

/** The host part of a URL for an address the server binds: a wildcard is reached on loopback. */
export function hostForUrl(host: string): string {
  if (host === '0.0.0.0' || host === '::') return '127.0.0.1';
  return host.includes(':') ? `[${host}]` : host;
}
