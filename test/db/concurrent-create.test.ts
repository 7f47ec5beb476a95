import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';

const ROOT = join(__dirname, '..', '..');

/** Run `kopek merchant create` in a child process that waits for the instant `startAt` before it opens the file. */
function createAt(script: string, db: string, name: string, startAt: number): Promise<{ code: number | null; out: string; err: string }> {
  const proc = spawn(process.execPath, ['--import', 'tsx', script, String(startAt), 'merchant', 'create', '--name', name, '--json', '--db', db], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  proc.stdout!.on('data', (c: Buffer) => (out += c.toString()));
  proc.stderr!.on('data', (c: Buffer) => (err += c.toString()));
  return new Promise((resolve) => proc.on('exit', (code) => resolve({ code, out, err })));
}

// Three admin commands started together on a file that did not exist failed with "table merchants already
// exists": each read schema version 0 before any of them held the write lock, and each then installed the schema.
test('admin commands started at once on a new database file each install nothing twice and all succeed', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'kopek-concurrent-create-'));
  try {
    const script = join(dir, 'at.ts');
    // The modules load first (the slow part); then each child waits for the same instant and runs the command.
    writeFileSync(
      script,
      `import { main } from ${JSON.stringify(join(ROOT, 'src', 'main.ts'))};
const [at, ...argv] = process.argv.slice(2);
while (Date.now() < Number(at)) {}
main(argv).then((code) => { process.exitCode = code; });
`,
    );
    const db = join(dir, 'new.db');
    for (let round = 0; round < 3; round++) {
      rmSync(db, { force: true });
      rmSync(`${db}-wal`, { force: true });
      rmSync(`${db}-shm`, { force: true });
      const startAt = Date.now() + 4000;
      const results = await Promise.all(['a', 'b', 'c'].map((n) => createAt(script, db, `Merchant ${n}`, startAt)));
      for (const r of results) assert.equal(r.code, 0, `round ${round}: ${r.err}`);
      const check = new Database(db, { readonly: true });
      try {
        assert.equal((check.prepare('SELECT count(*) AS n FROM merchants').get() as { n: number }).n, 3);
      } finally {
        check.close();
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
