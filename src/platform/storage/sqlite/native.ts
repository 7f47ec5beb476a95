import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

/**
 * Where better-sqlite3 finds its native addon. In development it finds it itself; the single executable
 * sets a loaded addon here before the database opens, with the addon's file and a bundled copy of
 * better-sqlite3's JavaScript for threads (see build.mjs and src/sea.ts).
 */
export const nativeBinding: { addon?: unknown; path?: string; libSource?: string } = {};

/** The addon's file: the one the executable unpacked, else better-sqlite3's own build. */
export function nativeBindingPath(): string {
  if (nativeBinding.path) return nativeBinding.path;
  return join(dirname(packageRequire().resolve('better-sqlite3/package.json')), 'build', 'Release', 'better_sqlite3.node');
}

/**
 * better-sqlite3's JavaScript for a worker thread to load: the package's entry file in development, the
 * executable's bundled copy as text otherwise.
 */
export function betterSqliteLib(): { file: string } | { source: string } {
  if (nativeBinding.libSource !== undefined) return { source: nativeBinding.libSource };
  return { file: packageRequire().resolve('better-sqlite3') };
}

// Resolved at run time (never by the bundler): only development runs from node_modules.
function packageRequire(): NodeJS.Require {
  return createRequire(__filename);
}
