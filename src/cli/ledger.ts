import { parseArgs, onlyFlags } from '../platform/args';
import { COMMON_OPTIONS, output, runSubcommand, withStore, type Command } from './command';
import { checkLedger, type CheckResult } from '../money/ledger/check';

/** What the ledger check proves, in the words `kopek ledger check` and `kopek doctor` both print. */
export const LEDGER_PROOF = 'balances equal their postings, nothing overdrawn, every movement in place';

/** The one-line verdict of a ledger check: `kopek ledger check` and `kopek doctor` print the same words. */
export function ledgerVerdict(r: CheckResult): string {
  const n = r.books.length;
  if (r.ok) return `${n} ${n === 1 ? 'book balances' : 'books balance'}`;
  const k = r.problems.length;
  return `${k} ${k === 1 ? 'problem' : 'problems'}, first: ${r.problems[0]}`;
}

/** What to do about a failed ledger check, the same in both commands. */
export const LEDGER_ACTION = 'report it as a bug, with the database and the list of problems (kopek ledger check)';

const usage = `Usage:
  kopek ledger check [--db PATH] [--json]

check    proves the ledger from its postings (${LEDGER_PROOF}), in one consistent snapshot, safe while the server runs:
         every entry's postings sum to zero and move the entry's amount between the right accounts;
         each book's stored balances equal the sums of its postings; reserves never went below 0 and
         no payout or refund left available below 0; every payout, payment and refund has the movements its
         status calls for. Prints each book's balance, available and reserved; exits 1 with the list
         of problems when any invariant is broken.

Options:
${COMMON_OPTIONS}

Examples:
  kopek ledger check
  kopek ledger check --db /var/lib/kopek/kopek.db --json`;

export const ledger: Command = {
  name: 'ledger',
  summary: 'prove the ledger: balances equal postings, nothing overdrawn',
  usage,
  run: (argv) => runSubcommand('ledger', parseArgs(argv), {
    async check(args) {
      onlyFlags(args, []);
      const r = await withStore(args, checkLedger);
      const lines = r.books.map((b) => `${b.shop_id} ${b.mode.padEnd(4)}  balance ${b.balance}  available ${b.available}  reserved ${b.reserved}  entries ${b.entries}`);
      lines.push(r.ok ? `ok: ${ledgerVerdict(r)}` : `FAILED: ${ledgerVerdict(r)}`);
      if (!r.ok) lines.push(`  → ${LEDGER_ACTION}`, 'problems:', ...r.problems.map((p) => `  ${p}`));
      output(args, r, lines);
      if (!r.ok) process.stderr.write(`kopek ledger: check failed: ${r.problems.length} problems\n`);
      return r.ok ? 0 : 1;
    },
  }),
};
