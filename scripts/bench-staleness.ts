// How soon a change an admin command writes to the database file is in force at a running server, through its
// caches (the key lookup cache here: the key, its scopes, its shop's allow-list). Each round makes a key with
// `kopek key create`, uses it once so that the server holds it, revokes it with `kopek key revoke` (a process of its
// own, as an operator runs it), and polls the server every 2 ms from the moment the command exits until the key is
// refused. The bound is 1 s for the slowest round.
//
// Usage: node --import tsx scripts/bench-staleness.ts [--rounds N] [--exe PATH]
//   --rounds N   revocations measured (default 20)
//   --exe PATH   the kopek executable (default dist/kopek, else the sources through tsx)
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { intOption, kopekCommand, scriptArgs, startKopek, type KopekCommand } from './lib/kopek-process';

const BOUND_MS = 1000;

const opts = scriptArgs(process.argv.slice(2), { rounds: 'value', exe: 'value' });
const rounds = intOption(opts, 'rounds', 20);
const k = kopekCommand(opts.get('exe') as string | undefined, true);

function command(args: string[]): Promise<{ code: number | null; out: string; err: string; exitedAt: number }> {
  const proc = spawn(k.cmd, [...k.args, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  proc.stdout!.on('data', (c: Buffer) => (out += c.toString()));
  proc.stderr!.on('data', (c: Buffer) => (err += c.toString()));
  return new Promise((resolve) => proc.on('exit', (code) => resolve({ code, out, err, exitedAt: performance.now() })));
}

async function status(url: string, key: string): Promise<number> {
  const r = await fetch(`${url}/v1/public/payments?limit=1`, { headers: { Authorization: `Bearer ${key}` } });
  await r.arrayBuffer();
  return r.status;
}

async function main(cmd: KopekCommand): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'kopek-staleness-'));
  const db = join(dir, 'kopek.db');
  const server = await startKopek(cmd, ['--db', db, '--log-level', 'warn']);
  try {
    const shop = /^\s+shop\s+([0-9a-f-]{36})\s*$/m.exec(server.stderr())?.[1];
    if (!shop) throw new Error(`no demo shop printed: ${server.stderr().slice(-500)}`);
    const seen: number[] = [];
    for (let i = 0; i < rounds; i++) {
      const made = await command(['key', 'create', '--shop', shop, '--mode', 'test', '--json', '--db', db]);
      if (made.code !== 0) throw new Error(`key create failed: ${made.err}`);
      const { id, key } = JSON.parse(made.out) as { id: string; key: string };
      if ((await status(server.url, key)) !== 200) throw new Error('a new key was refused');
      const revoked = await command(['key', 'revoke', id, '--db', db]);
      if (revoked.code !== 0) throw new Error(`key revoke failed: ${revoked.err}`);
      const deadline = revoked.exitedAt + 10_000;
      for (;;) {
        if ((await status(server.url, key)) === 401) break;
        if (performance.now() > deadline) throw new Error('the revoked key was still accepted after 10 s');
        await new Promise((r) => setTimeout(r, 2));
      }
      seen.push(performance.now() - revoked.exitedAt);
    }
    seen.sort((a, b) => a - b);
    const max = seen[seen.length - 1];
    console.log(`${k.label}: ${rounds} revocations by another process; seen by the server after (from the command's exit):`);
    console.log(`  median ${seen[Math.floor(seen.length / 2)].toFixed(1)} ms, max ${max.toFixed(1)} ms (bound ${BOUND_MS} ms)`);
    console.log(max <= BOUND_MS ? 'bench-staleness: PASS' : 'bench-staleness: FAIL');
    if (max > BOUND_MS) process.exitCode = 1;
  } finally {
    server.proc.kill('SIGTERM');
    await server.exited;
    rmSync(dir, { recursive: true, force: true });
  }
}

void main(k).catch((err) => {
  console.error(err);
  process.exit(1);
});
