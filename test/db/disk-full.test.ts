import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync, unlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestServer } from '../helpers/server';

/** A small tmpfs of `size_mb`, or the reason this machine cannot make one (not root, no mount). */
function smallDisk(size_mb: number): { dir: string; remove(): void } | string {
  const dir = mkdtempSync(join(tmpdir(), 'kopek-full-'));
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${size_mb}m,mode=0700`, 'tmpfs', dir], { stdio: 'ignore' });
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    return `cannot mount a tmpfs here (${(err as Error).message.split('\n')[0]})`;
  }
  return {
    dir,
    remove: () => {
      execFileSync('umount', ['-l', dir], { stdio: 'ignore' });
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

const disk = process.getuid?.() === 0 ? null : 'needs root to mount a tmpfs';

test('disk full during a group commit crashes nothing: the group is answered 503, /healthz says so, and writes resume when space returns', { skip: disk ?? false }, async () => {
  const d = smallDisk(24);
  if (typeof d === 'string') return void assert.fail(d);
  const filler = join(d.dir, 'filler');
  // Room to give back later: 6 MiB of the 24.
  writeFileSync(filler, Buffer.alloc(6 * 1024 * 1024, 1));
  const s = await startTestServer({}, { dir: d.dir });
  try {
    const metadata = { blob: 'x'.repeat(900 * 1024) };
    const seen = new Map<number, number>();
    let refused: Awaited<ReturnType<typeof s.request>> | null = null;
    // 48 clients at a time, each creating a payment of ~900 KB: the disk fills within a few rounds.
    for (let round = 0; round < 20 && !refused; round++) {
      const rs = await Promise.all(Array.from({ length: 48 }, () => s.request('POST', '/v1/public/payments', { body: { amount: 10_000, metadata } })));
      for (const r of rs) {
        seen.set(r.status, (seen.get(r.status) ?? 0) + 1);
        if (r.status === 503) refused ??= r;
      }
    }
    assert.ok(refused, `the disk never filled: ${JSON.stringify([...seen])}`);
    assert.deepEqual([...seen.keys()].filter((st) => st !== 201 && st !== 503), [], `only 201 and 503: ${JSON.stringify([...seen])}`);
    assert.equal(refused!.body.error.code, 'unavailable');
    assert.equal(refused!.headers['retry-after'], '1');
    // The process is alive and says what is wrong.
    const sick = await s.request('GET', '/healthz', { key: null });
    assert.equal(sick.status, 503);
    assert.match(sick.body.error.message, /SQLITE_FULL|SQLITE_IOERR/);
    // Space returns: writes and health come back without a restart.
    unlinkSync(filler);
    const after = await s.request('POST', '/v1/public/payments', { body: { amount: 10_000 } });
    assert.equal(after.status, 201, after.text);
    assert.equal((await s.request('GET', '/healthz', { key: null })).status, 200);
    assert.equal((await s.request('GET', `/v1/public/payments/${after.body.payment.id}`)).status, 200);
  } finally {
    await s.close().catch(() => {});
    d.remove();
  }
});
