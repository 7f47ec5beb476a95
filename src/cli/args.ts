import { strictArgs, type RefusalWording, type StrictOptions } from '../base/strict-args';

/** Parsed command-line words: positionals, and flags with their values (`true` for switches). */
export interface Args {
  positional: string[];
  flags: Map<string, string | true>;
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
  for (const t of tokens) {
    if (t.kind === 'positional') positional.push(t.value);
    else if (t.kind === 'option') flags.set(t.name, t.value ?? true);
  }
  return { positional, flags };
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
