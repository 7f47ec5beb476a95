import { accessSync, constants, existsSync } from 'node:fs';
import { dirname, resolve } from 'node:path';

/**
 * Why this process could not write the database, or null when it can: the file itself (when it exists) and
 * its folder, where SQLite keeps the -wal and -shm files beside it and creates the file when it is new.
 * A read-only mount answers EROFS even to root; a file or folder without write permission, EACCES.
 */
export function writeProblem(dbPath: string): string | null {
  if (dbPath === ':memory:') return null;
  const file = resolve(dbPath);
  const folder = dirname(file);
  const targets = existsSync(file) ? [['file', file], ['folder', folder]] : existsSync(folder) ? [['folder', folder]] : [];
  for (const [what, path] of targets) {
    try {
      accessSync(path, constants.W_OK);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      const why = code === 'EROFS' ? 'it is on a read-only file system' : code === 'EACCES' ? 'this user may not write it' : (err as Error).message;
      return `the database ${what} "${path}" is not writable (${code}: ${why})`;
    }
  }
  return null;
}
