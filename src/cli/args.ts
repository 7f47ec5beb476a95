import { strictArgs, type RefusalWording, type StrictOptions } from '../platform/strict-args';

/** Parsed command-line words: positionals, and flags with their values (`true` for switches). */
export interface Args {
  positional: string[];
  /** Each flag's value; of a flag given twice, the last. */
  flags: Map<string, string | true>;
  /** Every value each flag was given, in order: for the flags that may repeat (`kopek trigger --set`). */
  values: Map<string, string[]>;
}

const ARGS_WORDING: RefusalWording = {
  unknown: (word) => `unknown option ${word}`,
  needsValue: (name) => `option ${name} needs a value`,
  takesNoValue: (name) => `option ${name} takes no value`,
};

/**
 * Split argv into positionals and `--flag value` / `--flag=value` / switches named in `switches` (and `-h`
 * for --help), with node:util parseArgs in strict mode. Which flags a command knows depends on its
 * subcommand, a positional, so every `--name` written is declared here (a value unless a switch) and the
 * command refuses those it does not know afterwards (onlyFlags).
 */
export function parseArgs(argv: string[], switches: readonly string[] = ['json', 'help']): Args {
  const tokens = strictArgs(argv, declared(argv, switches), ARGS_WORDING, true);
  const positional: string[] = [];
  const flags = new Map<string, string | true>();
  const values = new Map<string, string[]>();
  for (const t of tokens) {
    if (t.kind === 'positional') positional.push(t.value);
    else if (t.kind === 'option') {
      flags.set(t.name, t.value ?? true);
      if (t.value !== undefined) values.set(t.name, [...(values.get(t.name) ?? []), t.value]);
    }
  }
  return { positional, flags, values };
}

function declared(argv: string[], switches: readonly string[]): StrictOptions {
  const options: StrictOptions = { help: { type: 'boolean', short: 'h' } };
  for (const word of argv) {
    if (word === '--') break;
    if (!word.startsWith('--')) continue;
    const eq = word.indexOf('=', 2);
    const name = eq < 0 ? word.slice(2) : word.slice(2, eq);
    if (name !== '' && !Object.hasOwn(options, name)) options[name] = { type: switches.includes(name) ? 'boolean' : 'string' };
  }
  return options;
}

/** A flag's string value, or undefined. */
export function flag(args: Args, name: string): string | undefined {
  const v = args.flags.get(name);
  return typeof v === 'string' ? v : undefined;
}

/** Refuse flags the command does not know. */
export function onlyFlags(args: Args, known: readonly string[]): void {
  for (const k of args.flags.keys()) {
    if (!known.includes(k) && k !== 'json' && k !== 'help' && k !== 'db') throw new Error(`unknown option --${k}`);
  }
}

/** Refuse positionals beyond the first `count` (the subcommand and its arguments). */
export function atMostPositionals(args: Args, count: number, usage: string): void {
  if (args.positional.length > count) {
    throw new Error(`unexpected argument "${args.positional[count]}"; usage: ${usage}`);
  }
}

/**
 * The id a subcommand acts on, given as `--NAME ID` or as the word after the subcommand (where that form
 * exists): every command takes the flag for a shop, a merchant or a key, so an operator need not remember
 * which one wants which. Returns the id and the positionals after it (the subcommand's other arguments).
 */
export function idArg(args: Args, name: 'shop' | 'merchant' | 'key'): { id: string | undefined; rest: string[] } {
  const after = args.positional.slice(1);
  const given = flag(args, name);
  return given === undefined ? { id: after[0], rest: after.slice(1) } : { id: given, rest: after };
}

/** Refuse more than `count` arguments after the subcommand (the id given positionally counts as one). */
export function atMostAfterSub(words: string[], count: number, usage: string): void {
  if (words.length > count) throw new Error(`unexpected argument "${words[count]}"; usage: ${usage}`);
}

/** "unknown subcommand" of `command`, naming the closest known one when the word looks like a typo of it. */
export function unknownSubcommand(command: string, sub: string | undefined, known: readonly string[]): Error {
  const near = sub === undefined ? undefined : didYouMean(sub, known);
  return new Error(`unknown subcommand "${sub ?? ''}"${near ? `; did you mean "${command} ${near}"?` : ''}; see kopek ${command} --help`);
}

/**
 * The candidate closest to `word` when it is close enough to be a typo of it (an edit distance, with a
 * swap of two neighbours counting once, of at most a third of the word, at least 1), or else one sharing
 * most of its beginning (`delivery` for `deliveries`); undefined otherwise.
 */
export function didYouMean(word: string, candidates: readonly string[]): string | undefined {
  const w = word.toLowerCase();
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const c of candidates) {
    const d = editDistance(w, c);
    if (d < bestDistance) [best, bestDistance] = [c, d];
  }
  if (best !== undefined && bestDistance <= Math.max(1, Math.floor(w.length / 3))) return best;
  return candidates.find((c) => w.length >= 3 && commonPrefix(w, c) >= Math.max(3, Math.ceil(w.length * 0.6)));
}

function commonPrefix(a: string, b: string): number {
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i++;
  return i;
}

/** Optimal string alignment distance: insertions, deletions, substitutions and swaps of neighbours. */
function editDistance(a: string, b: string): number {
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      d[i][j] = Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d[i][j] = Math.min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.length][b.length];
}
