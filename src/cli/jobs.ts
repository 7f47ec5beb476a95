import { parseArgs, flag, onlyFlags, type Args } from '../platform/args';
import { COMMON_OPTIONS, output, runSubcommand, withStore, type Command } from './command';
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
  const { id, kind, subject_id, shop_id, mode, state, attempt, last_error } = r;
  return { id, kind, subject_id, shop_id, mode, state, attempt, due_at: iso(r.due_at), last_error };
}

function column(cells: Array<string | number>): string {
  return cells.map((c, i) => (i === 0 ? String(c).padEnd(32) : String(c).padStart(9))).join(' ');
}

async function list(args: Args): Promise<void> {
  onlyFlags(args, ['limit']);
  const limitText = flag(args, 'limit') ?? '20';
  const limit = Number(limitText);
  if (!Number.isInteger(limit) || limit < 1 || limit > 1000) throw new Error(`--limit must be an integer from 1 to 1000, not "${limitText}"`);
  const { counts, failing } = await withStore(args, async (store) => ({
    counts: await countJobs(store),
    failing: (await failingJobs(store, limit)).map(describe),
  }));
  const lines = counts.length === 0 ? ['(no pending or dead jobs)'] : [column(['kind', 'pending', 'retrying', 'dead'])];
  for (const c of counts) lines.push(column([c.kind, c.pending, c.retrying, c.dead]));
  if (failing.length > 0) lines.push('', 'failing jobs (newest first):');
  for (const f of failing) {
    lines.push(`${f.id}  ${f.state === 'dead' ? 'dead    ' : 'retrying'}  ${f.kind}  ${f.subject_id}  attempt ${f.attempt}  due ${f.due_at}  ${f.last_error ?? ''}`);
  }
  output(args, { counts, failing }, lines);
}

async function retry(args: Args): Promise<void> {
  onlyFlags(args, []);
  const id = args.positional[1];
  const n = Number(id);
  if (!id || !Number.isSafeInteger(n) || n < 1) throw new Error(`jobs retry needs a numeric JOB_ID, not "${id ?? ''}"`);
  const row = await withStore(args, (store) => store.tx(async (tx) => reviveJob(tx, n, Date.now())));
  output(args, describe(row), [`job ${row.id} (${row.kind}) is pending again, due ${iso(row.due_at)}`]);
}

export const jobs: Command = {
  name: 'jobs',
  summary: 'list scheduled jobs per kind and state, show failing ones, retry a dead one',
  usage,
  async run(argv) {
    const args = parseArgs(argv);
    if (args.positional.length === 0) args.positional.unshift('list');
    return runSubcommand('jobs', args, { list, retry });
  },
};
