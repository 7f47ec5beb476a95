/** Parsed command-line words: positionals, and flags with their values (`true` for switches). */
export interface Args {
  positional: string[];
  flags: Map<string, string | true>;
}

/** Split argv into positionals and `--flag value` / `--flag=value` / switches named in `switches`. */
export function parseArgs(argv: string[], switches: readonly string[] = ['json', 'help']): Args {
  const positional: string[] = [];
  const flags = new Map<string, string | true>();
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '-h') {
      flags.set('help', true);
    } else if (a.startsWith('--')) {
      const eq = a.indexOf('=');
      const name = eq > 0 ? a.slice(2, eq) : a.slice(2);
      if (eq > 0) flags.set(name, a.slice(eq + 1));
      else if (switches.includes(name)) flags.set(name, true);
      else {
        const v = argv[i + 1];
        if (v === undefined || v.startsWith('--')) throw new Error(`option --${name} needs a value`);
        flags.set(name, v);
        i++;
      }
    } else {
      positional.push(a);
    }
  }
  return { positional, flags };
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
