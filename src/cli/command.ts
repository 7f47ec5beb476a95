import { openDatabase } from '../db/open';
import { Store } from '../db/tx';
import { defaultConfig } from '../config';
import { flag, type Args } from './args';

/** An admin command: a name, a fixed usage text, and `run`, which returns its exit code. */
export interface Command {
  name: string;
  summary: string;
  usage: string;
  run(argv: string[]): Promise<number> | number;
}

/** Open the store the command acts on: `--db`, else `KOPEK_DB`, else the server's default. */
export function openStore(args: Args): Store {
  const path = flag(args, 'db') ?? process.env.KOPEK_DB ?? defaultConfig().db;
  return new Store(openDatabase(path));
}

/** Print a result: one JSON object with `--json`, else `lines` for a person. */
export function output(args: Args, json: unknown, lines: string[]): void {
  if (args.flags.has('json')) process.stdout.write(JSON.stringify(json) + '\n');
  else process.stdout.write(lines.join('\n') + '\n');
}

/** The options every command takes, for usage texts. */
export const COMMON_OPTIONS = `  --db PATH   database file (default ./data/kopek.db, or KOPEK_DB)
  --json      print one JSON object instead of text
  --help      show this help`;
