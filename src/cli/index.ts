import type { Command } from './command';
import { serve } from './serve';
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

/** Every admin command, in the order `kopek --help` lists them. */
export const COMMANDS: Command[] = [serve, demo, merchant, shop, key, ledger, jobs, webhook, admin, backup, doctor];
