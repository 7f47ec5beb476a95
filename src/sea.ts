import { createHash } from 'node:crypto';
import { existsSync, lstatSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import * as sea from 'node:sea';
import { nativeBinding } from './platform/storage/sqlite/open';
import { exitWith, main } from './main';

/** Where build.mjs stores better-sqlite3's native addon. */
export const ADDON_ASSET = 'better_sqlite3.node';
/** Where build.mjs stores better-sqlite3's JavaScript, bundled, for worker threads. */
export const LIB_ASSET = 'better_sqlite3.js';

/**
 * Best first: KOPEK_CACHE_DIR, the user's cache, then per-user folders in the temp directory and /dev/shm (writable
 * under a read-only root); per user, so no user can plant a library another's kopek would load.
 */
export function cacheRoots(env: NodeJS.ProcessEnv = process.env): string[] {
  const roots: string[] = [];
  if (env.KOPEK_CACHE_DIR) roots.push(env.KOPEK_CACHE_DIR);
  if (env.XDG_CACHE_HOME) roots.push(join(env.XDG_CACHE_HOME, 'kopek'));
  const home = env.HOME || safeHomedir();
  if (home) roots.push(join(home, '.cache', 'kopek'));
  const uid = typeof process.getuid === 'function' ? process.getuid() : 'user';
  roots.push(join(tmpdir(), `kopek-${uid}`));
  if (existsSync('/dev/shm')) roots.push(join('/dev/shm', `kopek-${uid}`));
  return roots;
}

function safeHomedir(): string {
  try {
    return homedir();
  } catch {
    return '';
  }
}

/** At <root>/<sha256>/better_sqlite3.node; an existing file is reused only when its bytes equal the asset's. */
export function unpackAddon(bytes: Buffer, roots: string[] = cacheRoots()): string {
  const hash = createHash('sha256').update(bytes).digest('hex');
  const failures: string[] = [];
  for (const root of roots) {
    const dir = join(root, hash);
    const file = join(dir, ADDON_ASSET);
    try {
      makeDirs(dir);
      assertPrivate(root);
      if (sameBytes(file, bytes)) return file;
      // Written under a private name and renamed, so a concurrent start never loads a half-written file.
      const partial = `${file}.${process.pid}.partial`;
      rmSync(partial, { force: true });
      writeFileSync(partial, bytes, { mode: 0o500 });
      try {
        renameSync(partial, file);
      } catch (err) {
        rmSync(partial, { force: true });
        throw err;
      }
      return file;
    } catch (err) {
      failures.push(`${dir}: ${(err as Error).message}`);
    }
  }
  throw new Error(`cannot unpack the SQLite addon: ${failures.join('; ')}; set KOPEK_CACHE_DIR to a writable folder of this user`);
}

/** By hand: recursive mkdir spins forever on some pseudo file systems (HOME in /proc); failing fast tries the next root. */
function makeDirs(dir: string): void {
  const parent = dirname(dir);
  if (parent !== dir && !existsSync(parent)) makeDirs(parent);
  try {
    mkdirSync(dir, { mode: 0o700 });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
}

/** A cache folder that others can write into could swap the library between the check and the load. */
function assertPrivate(root: string): void {
  const st = lstatSync(root);
  if (!st.isDirectory()) throw new Error(`"${root}" is not a directory`);
  const uid = typeof process.getuid === 'function' ? process.getuid() : st.uid;
  if (st.uid !== uid) throw new Error(`"${root}" belongs to another user (uid ${st.uid})`);
  if ((st.mode & 0o022) !== 0) throw new Error(`"${root}" is writable by others (mode ${(st.mode & 0o777).toString(8)})`);
}

function sameBytes(file: string, bytes: Buffer): boolean {
  try {
    return readFileSync(file).equals(bytes);
  } catch {
    return false;
  }
}

export function loadAddon(file: string): unknown {
  const mod = { exports: {} as unknown };
  process.dlopen(mod, file);
  return mod.exports;
}

const NO_DATABASE = new Set(['--version', '-v', 'version', '--help', '-h', 'help']);

/** Hand the carried addon (and threads' JavaScript) to better-sqlite3, then run the command line. */
export async function runExecutable(argv: string[]): Promise<number> {
  // The version and the help need no database, so no addon: they work with no writable folder at all.
  if (sea.isSea() && !NO_DATABASE.has(argv[0] ?? '')) {
    try {
      nativeBinding.path = unpackAddon(Buffer.from(sea.getAsset(ADDON_ASSET)));
      nativeBinding.addon = loadAddon(nativeBinding.path);
      nativeBinding.libSource = sea.getAsset(LIB_ASSET, 'utf8');
    } catch (err) {
      process.stderr.write(`kopek: ${(err as Error).message}\n`);
      return 1;
    }
  }
  return main(argv);
}

// Only the bundle (build.mjs defines KOPEK_BUNDLE) starts here; tests import the functions above.
declare const KOPEK_BUNDLE: boolean | undefined;
if (typeof KOPEK_BUNDLE !== 'undefined') exitWith(runExecutable(process.argv.slice(2)));
