import { createHash } from 'node:crypto';
import { chmodSync, unlinkSync } from 'node:fs';
import { once } from 'node:events';
import { connect, createServer } from 'node:net';
import { resolve } from 'node:path';

/** Longest socket path the kernel takes (sun_path less its terminator, with room); longer ones use an abstract name. */
const MAX_SOCKET_PATH = 100;

/** A held lock: release it on shutdown. */
export interface ServerLock {
  /** Where the lock lives (a socket file beside the database, or an abstract name). */
  readonly where: string;
  release(): Promise<void>;
}

/**
 * One server per SQLite file. The truth is in the file, but a server that holds the lock knows no other server
 * runs on it: job claims left by a server that died are free at once instead of after their lease, and the WAL
 * is synced and checkpointed by one server process (admin commands commit with synchronous=FULL). The lock is a Unix
 * socket the server listens on beside the database (`<db>.lock`): the kernel drops it when the process dies,
 * however it dies, so a stale file is recognised (nobody answers) and taken over. Admin commands, `doctor`
 * and `backup` do not take it and keep working beside a running server.
 */
export async function acquireServerLock(dbPath: string): Promise<ServerLock | null> {
  if (dbPath === ':memory:') return null;
  const file = `${resolve(dbPath)}.lock`;
  const abstract = Buffer.byteLength(file) > MAX_SOCKET_PATH;
  const where = abstract ? `\0kopek-lock-${createHash('sha256').update(file).digest('hex').slice(0, 32)}` : file;
  const server = createServer((sock) => sock.destroy());
  for (let attempt = 0; ; attempt++) {
    try {
      server.listen(where);
      await once(server, 'listening');
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EADDRINUSE' || attempt > 0) {
        throw new Error(`cannot start on "${dbPath}": cannot take the server lock beside the database: ${(err as Error).message}`);
      }
      if (await answers(where)) {
        throw new Error(`cannot start on "${dbPath}": another kopek server is running on this database (its lock is ${abstract ? 'held' : `"${file}"`}); stop it first, or use admin commands beside it`);
      }
      // Left by a server that died: nobody answers on it any more.
      if (!abstract) unlinkSync(file);
    }
  }
  if (!abstract) chmodSync(file, 0o600);
  return {
    where: abstract ? '(abstract socket)' : file,
    release: () =>
      new Promise<void>((done) => {
        server.close(() => done());
        if (!abstract) {
          try {
            unlinkSync(file);
          } catch {
            // Already gone: nothing to release.
          }
        }
      }),
  };
}

/** True when a live server accepts on the lock. */
function answers(where: string): Promise<boolean> {
  return new Promise((done) => {
    const sock = connect(where);
    sock.once('connect', () => {
      sock.destroy();
      done(true);
    });
    sock.once('error', () => done(false));
  });
}
