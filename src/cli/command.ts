import { existsSync } from 'node:fs';
import { fileSchemaVersion, openEngine } from '../platform/storage/maintenance';
import { isPostgresUrl, redactUrl } from '../platform/storage/postgres/open';
import type { Store } from '../platform/storage/store';
import { databaseLocation } from '../platform/config';
import { flag, unknownSubcommand, type Args } from '../platform/args';

export interface Command {
  name: string;
  summary: string;
  usage: string;
  run(argv: string[]): Promise<number> | number;
}

export interface Io {
  out(text: string): void;
  err(text: string): void;
}

export const processIo: Io = {
  out: (text) => void process.stdout.write(text),
  err: (text) => void process.stderr.write(text),
};

let current: Io = processIo;

/** The output commands write to now: the process's, or the one `main` was given (tests run commands in-process). */
export function io(): Io {
  return current;
}

export async function withIo<T>(target: Io, fn: () => Promise<T>): Promise<T> {
  const previous = current;
  current = target;
  try {
    return await fn();
  } finally {
    current = previous;
  }
}

export function dbOf(args: Args): string {
  return databaseLocation(flag(args, 'db'));
}

/** Run `fn` on the command's store; a missing file is an error unless `create` (demo, merchant create), so a mistyped path starts no empty database. */
export async function withStore<T>(args: Args, fn: (store: Store) => Promise<T>, opts: { create?: boolean } = {}): Promise<T> {
  const path = dbOf(args);
  const pg = isPostgresUrl(path);
  if (!pg && !opts.create && path !== ':memory:') {
    if (!existsSync(path)) throw new Error(`cannot open database "${path}": no such file (run kopek serve or kopek demo first, or pass --db)`);
    // Opening for writing installs the schema: a command pointed at some other SQLite file (a mistyped --db) must refuse instead.
    let version: number;
    try {
      version = fileSchemaVersion(path);
    } catch (err) {
      throw openError(path, err);
    }
    if (version === 0) throw new Error(`cannot open database "${path}": it is not a kopek database (no kopek schema; check --db)`);
  }
  let store: Store;
  try {
    store = await openEngine(path);
  } catch (err) {
    throw openError(pg ? redactUrl(path) : path, err);
  }
  try {
    return await fn(store);
  } finally {
    await store.close();
  }
}

// SQLite's own words ("file is not a database") say neither what failed nor which file.
function openError(path: string, err: unknown): Error {
  const message = (err as Error).message;
  return new Error(message.startsWith('cannot ') ? message : `cannot open database "${path}": ${message}`);
}

/** Print a result: one JSON object with `--json`, else `lines` for a person. */
export function output(args: Args, json: unknown, lines: string[]): void {
  current.out((args.flags.has('json') ? JSON.stringify(json) : lines.join('\n')) + '\n');
}

export function table(header: string[], rows: string[][]): string[] {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (cells: string[]): string => cells.map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]))).join('  ').trimEnd();
  return [line(header), ...rows.map(line)];
}

export function outputList<T>(args: Args, items: T[], empty: string, line: (item: T) => string): void {
  output(args, { items }, items.length === 0 ? [empty] : items.map(line));
}

export const COMMON_OPTIONS = `  --db PATH   database file (default ./data/kopek.db, or KOPEK_DB), or a postgres:// URL (or KOPEK_DATABASE_URL)
  --json      print one JSON object instead of text
  --help      show this help`;

/** The subcommand the first word names, run with the parsed arguments (exit 0 unless it says otherwise); another word is refused. */
export async function runSubcommand(command: string, args: Args, subs: Record<string, (args: Args) => Promise<number | void>>): Promise<number> {
  const [sub] = args.positional;
  if (sub === undefined || !Object.hasOwn(subs, sub)) throw unknownSubcommand(command, sub, Object.keys(subs));
  return (await subs[sub](args)) ?? 0;
}

/** `text` as JSON, or undefined when it is none (a server's answer, a forwarded body). */
export function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

export function splitList(text: string): string[] {
  return text.split(',').filter(Boolean);
}
