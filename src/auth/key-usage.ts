import type { App } from '../app-types';

/** A key's last use is written at most this often: a request must not cost a write. */
const FLUSH_EVERY_MS = 60_000;

interface Usage {
  /** Key id → real time of its last request, not yet written. */
  pending: Map<string, number>;
  lastFlush: number;
}

const usages = new WeakMap<App, Usage>();

function usageOf(app: App): Usage {
  let u = usages.get(app);
  if (!u) {
    u = { pending: new Map(), lastFlush: app.clocks.real() };
    usages.set(app, u);
    // What is still held when the server stops is written before the database closes.
    app.onClose(() => flushKeyUsage(app));
  }
  return u;
}

/**
 * Note that a key was just used (the cabinet shows it as "last use"). Kept in memory and written in one
 * group commit at most once a minute, so the figure may lag by that much; see flushKeyUsage.
 */
export function noteKeyUse(app: App, keyId: string): void {
  const u = usageOf(app);
  const now = app.clocks.real();
  u.pending.set(keyId, now);
  if (now - u.lastFlush >= FLUSH_EVERY_MS) {
    u.lastFlush = now;
    void writeUsage(app, u).catch((err) => app.log.warn('cannot record API key use', { error: (err as Error).message }));
  }
}

function writeUsage(app: App, u: Usage): Promise<void> {
  const batch = [...u.pending];
  u.pending.clear();
  if (batch.length === 0) return Promise.resolve();
  return app.store.write((tx) => {
    const st = tx.stmt(
      'INSERT INTO api_key_usage (key_id, last_used_at) VALUES (?, ?) ON CONFLICT (key_id) DO UPDATE SET last_used_at = MAX(last_used_at, excluded.last_used_at)',
    );
    for (const [id, at] of batch) st.run(id, at);
  });
}

/** Write every held last use now (before the cabinet lists keys, and at shutdown). */
export async function flushKeyUsage(app: App): Promise<void> {
  const u = usages.get(app);
  if (!u) return;
  u.lastFlush = app.clocks.real();
  await writeUsage(app, u);
}
