/**
 * The command line's one parser, for serve (config.ts, hence in platform/) and every admin command, with the
 * commands' conventions (subcommands, ids) beside it. `--name VALUE` or `--name=VALUE` for a value (the next word
 * is the value even starting with one dash, `--sim-delay -2`, never with two), `--name` for a switch, `-h` for
 * --help where that is a switch, only positionals after `--`. `given` keeps every occurrence, `flags` the last.
 */

/** `switch=` takes none, or one written `--name=VALUE`. */
export type FlagKind = 'value' | 'switch' | 'switch=';

export interface Grammar {
  /** Undefined: refused as unknown. */
  kind(name: string): FlagKind | undefined;
  /** If not, the first is refused as unknown. */
  positionals: boolean;
  /** Quoting it as typed (`=VALUE` included). */
  unknown(word: string): string;
}

/** Positionals, and flags with their values (`true` for a switch). */
export interface Args {
  positional: string[];
  given: Array<[name: string, value: string | true]>;
  /** Of a flag given twice, the last. */
  flags: Map<string, string | true>;
}

/** A word it cannot take throws an Error saying which and why. */
export function readArgs(words: readonly string[], grammar: Grammar): Args {
  const args: Args = { positional: [], given: [], flags: new Map() };
  const add = (name: string, value: string | true): void => {
    args.given.push([name, value]);
    args.flags.set(name, value);
  };
  for (let i = 0; i < words.length; i++) {
    const word = words[i];
    if (word === '--' || !word.startsWith('-') || word === '-') {
      const rest = word === '--' ? words.slice(i + 1) : [word];
      if (!grammar.positionals && rest.length > 0) throw new Error(grammar.unknown(rest[0]));
      args.positional.push(...rest);
      if (word === '--') break;
    } else if (!word.startsWith('--')) {
      // The one short option is -h; a group (-hh) is that switch again.
      if (grammar.kind('help') !== 'switch' || !/^-h+$/.test(word)) throw new Error(grammar.unknown(word));
      for (let n = 1; n < word.length; n++) add('help', true);
    } else {
      const eq = word.indexOf('=');
      const name = word.slice(2, eq < 0 ? undefined : eq);
      const kind = grammar.kind(name);
      if (kind === undefined) throw new Error(grammar.unknown(word));
      if (eq >= 0) {
        if (kind === 'switch') throw new Error(`option --${name} takes no value`);
        add(name, word.slice(eq + 1));
      } else if (kind === 'value') {
        const next = words[i + 1];
        if (next === undefined || next.startsWith('--')) throw new Error(`option --${name} needs a value`);
        add(name, next);
        i++;
      } else {
        add(name, true);
      }
    }
  }
  return args;
}

/** Every `--name` takes a value but the `switches` (and -h); the command refuses unknown ones afterwards (onlyFlags). */
export function parseArgs(argv: readonly string[], switches: readonly string[] = ['json', 'help']): Args {
  return readArgs(argv, {
    kind: (name) => (name === '' ? undefined : name === 'help' || switches.includes(name) ? 'switch' : 'value'),
    positionals: true,
    unknown: (word) => `unknown option ${word}`,
  });
}

export function flag(args: Args, name: string): string | undefined {
  const v = args.flags.get(name);
  return typeof v === 'string' ? v : undefined;
}

/** For the flags that may repeat (`kopek trigger --set`). */
export function flagValues(args: Args, name: string): string[] {
  return args.given.flatMap(([n, v]) => (n === name && typeof v === 'string' ? [v] : []));
}

/** Every command takes --json, --help and --db. */
export function onlyFlags(args: Args, known: readonly string[]): void {
  for (const k of args.flags.keys()) {
    if (!known.includes(k) && k !== 'json' && k !== 'help' && k !== 'db') throw new Error(`unknown option --${k}`);
  }
}

/** Of the positionals, or of the words after the subcommand. */
export function atMostPositionals(words: readonly string[], count: number, usage: string): void {
  if (words.length > count) throw new Error(`unexpected argument "${words[count]}"; usage: ${usage}`);
}

/** The id as `--NAME ID` (every command takes it) or the word after the subcommand, and the positionals after it. */
export function idArg(args: Args, name: 'shop' | 'merchant' | 'key'): { id: string | undefined; rest: string[] } {
  const after = args.positional.slice(1);
  const given = flag(args, name);
  return given === undefined ? { id: after[0], rest: after.slice(1) } : { id: given, rest: after };
}

/** Naming the closest known one when the word looks like a typo of it. */
export function unknownSubcommand(command: string, sub: string | undefined, known: readonly string[]): Error {
  const near = sub === undefined ? undefined : didYouMean(sub, known);
  return new Error(`unknown subcommand "${sub ?? ''}"${near ? `; did you mean "${command} ${near}"?` : ''}; see kopek ${command} --help`);
}

/** A candidate within an edit distance of a third of the word (at least 1), else one sharing most of its start. */
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

/** Optimal string alignment: insertions, deletions, substitutions and swaps of neighbours. */
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
