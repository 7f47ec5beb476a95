import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';

const ROOT = join(__dirname, '..', '..');

/** Run `kopek serve` on a port and wait for the process to end (bounded); its exit code and stderr. */
function serveOnce(port: number, db: string): Promise<{ code: number | string; stderr: string }> {
  const proc = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'src', 'main.ts'), 'serve', '--port', String(port), '--db', db, '--no-demo'], {
    cwd: ROOT,
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  proc.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  return new Promise((resolve) => {
    const timer = setTimeout(() => proc.kill('SIGKILL'), 20_000);
    proc.on('exit', (code, signal) => {
      clearTimeout(timer);
      resolve({ code: code ?? signal ?? -1, stderr });
    });
  });
}

test('serve that cannot bind (EADDRINUSE) exits non-zero with one clear line instead of running on nothing', async () => {
  const blocker = createServer();
  await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', r));
  const port = (blocker.address() as AddressInfo).port;
  const dir = mkdtempSync(join(tmpdir(), 'kopek-bind-'));
  try {
    const r = await serveOnce(port, join(dir, 'k.db'));
    assert.equal(r.code, 1, r.stderr);
    const lines = r.stderr.trim().split('\n');
    assert.equal(lines.length, 1, r.stderr);
    assert.equal(lines[0], `kopek serve: cannot listen on 127.0.0.1:${port}: the address is already in use (another process listens there)`);
  } finally {
    blocker.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
