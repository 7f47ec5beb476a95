import { parseArgs, flag, onlyFlags, unknownSubcommand } from '../platform/args';
import { COMMON_OPTIONS, output, withStore, type Command } from './command';
import { countJobs, failingJobs, reviveJob, type JobRow } from '../platform/queue/jobs-table';
import { iso } from '../platform/util/time';

const usage = `Usage:
  kopek jobs [list] [--limit N]
  kopek jobs retry JOB_ID

list     (the default) counts of scheduled jobs per kind: pending, retrying (failed at least once, will run again) and
         dead (gave up after too many failures); then the dead and retrying jobs, newest failure first,
         with their last error (at most --limit, default 20)
retry    brings a dead job back: pending, attempt 0, due now; a running server picks it up within its
         sweep interval (30 s)

Options:
  --limit N   how many failing jobs to list (default 20, at most 1000)
${COMMON_OPTIONS}

Examples:
  kopek jobs
  kopek jobs list --limit 5
  kopek jobs --json --db /var/lib/kopek/kopek.db
  kopek jobs retry 4711`;

function describe(r: JobRow): Record<string, unknown> {
  return { id: r.id, kind: r.kind, subject_id: r.subject_id, shop_id: r.shop_id, mode: r.mode, state: r.state, attempt: r.attempt, due_at: iso(r.due_at), last_error: r.last_error };
}

export const jobs: Command = {
  name: 'jobs',
  summary: 'list scheduled jobs per kind and state, show failing ones, retry a dead one',
  usage,
  async run(argv) {
    const args = parseArgs(argv);
    const [sub, id] = args.positional;
    if (sub !== undefined && sub !== 'list' && sub !== 'retry') throw unknownSubcommand('jobs', sub, ['list', 'retry']);
    return withStore(args, async (store) => {
      if (sub === undefined || sub === 'list') {
        onlyFlags(args, ['limit']);
        const limitText = flag(args, 'limit') ?? '20';
        const limit = Number(limitText);
        if (!Number.isInteger(limit) || limit < 1 || limit > 1000) throw new Error(`--limit must be an integer from 1 to 1000, not "${limitText}"`);
        const counts = await countJobs(store);
        const failing = (await failingJobs(store, limit)).map(describe);
        const lines = counts.length === 0 ? ['(no pending or dead jobs)'] : [`${'kind'.padEnd(32)} ${'pending'.padStart(9)} ${'retrying'.padStart(9)} ${'dead'.padStart(9)}`];
        for (const c of counts) lines.push(`${c.kind.padEnd(32)} ${String(c.pending).padStart(9)} ${String(c.retrying).padStart(9)} ${String(c.dead).padStart(9)}`);
        if (failing.length > 0) {
          lines.push('', 'failing jobs (newest first):');
          for (const f of failing) {
            lines.push(`${f.id}  ${f.state === 'dead' ? 'dead    ' : 'retrying'}  ${f.kind}  ${f.subject_id}  attempt ${f.attempt}  due ${f.due_at}  ${f.last_error ?? ''}`);
          }
        }
        output(args, { counts, failing }, lines);
        return 0;
      }
      onlyFlags(args, []);
      const n = Number(id);
      if (!id || !Number.isSafeInteger(n) || n < 1) throw new Error(`jobs retry needs a numeric JOB_ID, not "${id ?? ''}"`);
      const row = await store.tx(async (tx) => reviveJob(tx, n, Date.now()));
      output(args, describe(row), [`job ${row.id} (${row.kind}) is pending again, due ${iso(row.due_at)}`]);
      return 0;
    });
  },
};
