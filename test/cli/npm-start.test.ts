import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

// `npm start` under a supervisor: SIGTERM to the npm process left the server running (npm's shell passed the
// signal to nobody, and the tsx child, orphaned, kept the port). The server must stop as it does on its own
// SIGTERM: drain, close, free the port, leave no process behind.

const ROOT = join(__dirname, '..', '..');

/** Whether anything still accepts connections on the port. */
function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect(port, '127.0.0.1');
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
}

/** Whether any process of the group is alive. */
function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}

async function until(what: string, ok: () => boolean | Promise<boolean>, ms = 60_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await ok())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

for (const [to, what] of [
  ['npm', 'SIGTERM to the npm process alone (as docker stop, or kill PID)'],
  ['group', 'SIGTERM to the whole process group (as systemd), which npm forwards again'],
] as const) {
  test(`npm start under a supervisor: ${what} stops the server cleanly and frees the port`, { timeout: 180_000 }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'kopek-npm-start-'));
    const env: NodeJS.ProcessEnv = {};
    for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('KOPEK_') && k !== 'NODE_OPTIONS') env[k] = v;
    const npm = spawn('npm', ['start', '--', '--port', '0', '--db', join(dir, 'kopek.db')], { cwd: ROOT, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    npm.stdout.on('data', (d) => (out += d));
    npm.stderr.on('data', (d) => (out += d));
    const exited = new Promise<void>((r) => npm.once('exit', () => r()));
    try {
      await until('the listening line', () => /listening on http:\/\/127\.0\.0\.1:\d+/.test(out), 120_000);
      const port = Number(/listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(out)![1]);
      assert.equal(await listening(port), true);
      process.kill(to === 'npm' ? npm.pid! : -npm.pid!, 'SIGTERM');
      await exited;
      await until('the server process to end', () => !groupAlive(npm.pid!), 15_000);
      assert.equal(await listening(port), false, 'the port is free');
      assert.match(out, /kopek: SIGTERM received, finishing in-flight requests\n[\s\S]*kopek: stopped\n/);
      assert.doesNotMatch(out, /exiting at once/, 'a signal delivered twice at once is one stop, with its drain');
    } finally {
      if (groupAlive(npm.pid!)) process.kill(-npm.pid!, 'SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    }
  });
}
