import { execFileSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A PostgreSQL server of one test's own, which it may stop and start (the suite's shared one must stay up). */
export interface OwnPostgres {
  /** postgres://kopek@127.0.0.1:PORT/kopek */
  url: string;
  /** The server's data folder (its postmaster.pid names the server's process). */
  dataDir: string;
  stop(): void;
  start(): void;
  destroy(): void;
}

/** The server programs of Debian's postgresql package (PG_BIN overrides). */
function pgBin(): string {
  if (process.env.PG_BIN) return process.env.PG_BIN;
  const root = '/usr/lib/postgresql';
  const versions = existsSync(root) ? readdirSync(root).sort((a, b) => Number(b) - Number(a)) : [];
  if (versions.length === 0) throw new Error('no PostgreSQL server programs (apt-get install postgresql)');
  return join(root, versions[0], 'bin');
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
    s.on('error', reject);
  });
}

/** initdb into a temp folder and start the server on a free loopback port (about 2 s), with a database `kopek`. */
export async function ownPostgres(): Promise<OwnPostgres> {
  const bin = pgBin();
  const dir = mkdtempSync(join(tmpdir(), 'kopek-own-pg-'));
  const root = process.getuid?.() === 0;
  // PostgreSQL refuses to run as root: as root, its programs run as the postgres user.
  const run = (prog: string, args: string[]): void => {
    const [cmd, argv] = root ? ['runuser', ['-u', 'postgres', '--', join(bin, prog), ...args]] : [join(bin, prog), args];
    execFileSync(cmd, argv, { stdio: 'pipe' });
  };
  if (root) chownSync(dir, Number(execFileSync('id', ['-u', 'postgres']).toString().trim()), Number(execFileSync('id', ['-g', 'postgres']).toString().trim()));
  const data = join(dir, 'data');
  run('initdb', ['-D', data, '-A', 'trust', '-U', 'kopek', '--no-sync']);
  const port = await freePort();
  const start = (): void => run('pg_ctl', ['-D', data, '-l', join(dir, 'log'), '-w', '-o', `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1`, 'start']);
  start();
  execFileSync(join(bin, 'createdb'), ['-h', '127.0.0.1', '-p', String(port), '-U', 'kopek', 'kopek']);
  return {
    url: `postgres://kopek@127.0.0.1:${port}/kopek`,
    dataDir: data,
    start,
    stop: () => run('pg_ctl', ['-D', data, '-m', 'fast', '-w', 'stop']),
    destroy: () => {
      try {
        run('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']);
      } catch {
        // already stopped
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
