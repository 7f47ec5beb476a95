import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

/**
 * Where better-sqlite3 finds its native addon. In development it finds it itself; the single executable
 * sets a loaded addon here before the database opens (see build.mjs and src/sea.ts).
 */
export const nativeBinding: { addon?: unknown; path?: string } = {};

/** The addon's file: the one the executable unpacked, else better-sqlite3's own build. */
export function nativeBindingPath(): string {
  if (nativeBinding.path) return nativeBinding.path;
  // Resolved at run time (never by the bundler): only development runs from node_modules.
  const req = createRequire(__filename);
  return join(dirname(req.resolve('better-sqlite3/package.json')), 'build', 'Release', 'better_sqlite3.node');
}
