import type { Command } from './command';
import { serveCommand, type StartServer } from './serve';
import { demo, admin } from './admin';
import { merchant, shop, key } from './shop';
import { jobs } from './jobs';
import { ledger, doctor } from './doctor';
import { webhook } from './webhook';
import { backup, dbCommand, migrate } from './db';
import { trigger } from './trigger';
import { listen } from './listen';
export type { StartServer, ServedApp } from './serve';

/** Every command in `kopek --help` order; `serve` (the default) starts with `start`, handed in by the root the command line cannot import. */
export function cliCommands(start: StartServer): Command[] {
  return [serveCommand(start), demo, merchant, shop, key, ledger, jobs, webhook, admin, backup, doctor, migrate, dbCommand, trigger, listen];
}

