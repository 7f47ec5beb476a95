import type { Command } from './command';
import { serveCommand, type StartServer } from './serve';
import { demo } from './demo';
import { merchant } from './merchant';
import { shop } from './shop';
import { key } from './key';
import { jobs } from './jobs';
import { ledger } from './ledger';
import { webhook } from './webhook';
import { backup } from './backup';
import { doctor } from './doctor';
import { admin } from './admin';
import { trigger } from './trigger';
import { listen } from './listen';
import { dbCommand, migrate } from './db';
export type { StartServer, ServedApp } from './serve';

/** Every command in `kopek --help` order; `serve` (the default) starts with `start`, handed in by the root the command line cannot import. */
export function cliCommands(start: StartServer): Command[] {
  return [serveCommand(start), demo, merchant, shop, key, ledger, jobs, webhook, admin, backup, doctor, migrate, dbCommand, trigger, listen];
}

