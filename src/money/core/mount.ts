import type { Core } from './core';
import type { Module } from './module';

/**
 * Register what each module lists, in the order of the list: its banks, its job kinds, its sinks (so an event's
 * sinks run in module order). Nothing runs yet: `start` once the server listens, `stop` at shutdown in reverse order.
 */
export function mountModules(core: Pick<Core, 'banks' | 'scheduler' | 'events' | 'log'>, modules: readonly Module[]) {
  const names = new Set<string>();
  for (const m of modules) {
    if (names.has(m.name)) throw new Error(`cannot mount module "${m.name}": a module of that name is mounted already`);
    names.add(m.name);
    for (const bank of m.banks ?? []) core.banks.register(bank);
    for (const job of m.jobs ?? []) {
      if ('run' in job) core.scheduler.register(job.kind, job.run, job.opts);
      else core.scheduler.registerAsync(job.kind, job.async, job.opts);
    }
    for (const sink of m.sinks ?? []) core.events.addSink(sink);
  }
  return {
    start: () => {
      for (const m of modules) m.start?.();
    },
    // Every module stops (what it held is released) even when one before it fails, whose failure is logged.
    stop: async () => {
      for (const m of [...modules].reverse()) {
        try {
          await m.stop?.();
        } catch (err) {
          core.log.error('a module failed to stop', { module: m.name, error: String(err) });
        }
      }
    },
  };
}
