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

/**
 * Every command, in the order `kopek --help` lists them; `serve` (the first, the default) starts the server
 * with `start`, which the root hands in: the command line sits below the wiring and does not import it.
 */
export function cliCommands(start: StartServer): Command[] {
  return [serveCommand(start), demo, merchant, shop, key, ledger, jobs, webhook, admin, backup, doctor, migrate, dbCommand, trigger, listen];
}

