import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Checkpointer } from '../../src/db/checkpointer';
import { openDatabase } from '../../src/db/open';
import { createLogger } from '../../src/log';

test('a checkpoint thread that cannot open the database says so through the logger and the writer checkpoints again', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'kopek-ckpt-'));
  const db = openDatabase(join(dir, 'kopek.db'));
  const lines: string[] = [];
  // The thread opens the file it is given with fileMustExist, as better-sqlite3's public API allows.
  const ckpt = new Checkpointer(db, join(dir, 'missing', 'kopek.db'), createLogger('info', (l) => lines.push(l)));
  try {
    assert.equal(db.pragma('wal_autocheckpoint', { simple: true }), 0, 'the thread checkpoints while it lives');
    const deadline = Date.now() + 10_000;
    while (lines.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    const entry = JSON.parse(lines[0] ?? '{}') as Record<string, unknown>;
    assert.equal(entry.level, 'warn');
    assert.equal(entry.msg, 'WAL checkpoint thread stopped; checkpointing on the writer');
    assert.match(String(entry.error), /directory does not exist|unable to open/);
    assert.equal(db.pragma('wal_autocheckpoint', { simple: true }), 1000, 'SQLite checkpoints on the writer again');
  } finally {
    ckpt.close();
    db.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
