import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A small tmpfs of this test's own. */
export interface Tmpfs {
  dir: string;
  /** Remount it read-only (or back read-write). */
  remount(mode: 'ro' | 'rw'): void;
  remove(): void;
}

/**
 * Mount a tmpfs of `size_mb` (a disk that can fill, or be made read-only), or say why this machine cannot
 * (not root, no mount in this sandbox): the caller skips with that reason rather than pass without testing.
 */
export function mountTmpfs(size_mb: number): Tmpfs | string {
  if (process.getuid?.() !== 0) return 'needs root to mount a tmpfs';
  const dir = mkdtempSync(join(tmpdir(), 'kopek-tmpfs-'));
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${size_mb}m,mode=0700`, 'tmpfs', dir], { stdio: 'ignore' });
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    return `cannot mount a tmpfs here (${(err as Error).message.split('\n')[0]})`;
  }
  return {
    dir,
    remount: (mode) => execFileSync('mount', ['-o', `remount,${mode}`, dir], { stdio: 'ignore' }),
    remove: () => {
      execFileSync('umount', ['-l', dir], { stdio: 'ignore' });
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
