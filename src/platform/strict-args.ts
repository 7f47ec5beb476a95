import { parseArgs, type ParseArgsConfig } from 'node:util';

/** The options node:util parseArgs takes, by long name. */
export type StrictOptions = NonNullable<ParseArgsConfig['options']>;

/** One word (or `--name=value` pair) of the command line, in order, as node:util parseArgs reports it. */
export type ArgToken =
  | { kind: 'option'; index: number; name: string; rawName: string; value: string | undefined; inlineValue: boolean | undefined }
  | { kind: 'positional'; index: number; value: string }
  | { kind: 'option-terminator'; index: number };

/** How a caller words each refusal; each command line had its messages before this parser, and scripts read them. */
export interface RefusalWording {
  /** An option nobody declared (`word` as typed, `=value` included), or a positional where none are taken. */
  unknown(word: string): string;
  /** An option that takes a value was given none (`name` like `--port`). */
  needsValue(name: string): string;
  /** A switch was given a value (`--json=yes`). */
  takesNoValue(name: string): string;
}

/**
 * Parse `args` with node:util parseArgs in strict mode and return its tokens in order (so that the last of
 * two flags wins); a refusal throws an Error worded by `wording`.
 *
 * kopek has no short options taking values, so a word after an option that takes a value is that value,
 * even when it starts with a dash (`--sim-delay -2` must reach the check that says why -2 is wrong): such
 * pairs are joined as `--name=value` first, where Node's strict mode would call the dash ambiguous. A word
 * starting with `--` is never taken as a value: `--shop --mode test` says that --shop needs one.
 */
export function strictArgs(args: readonly string[], options: StrictOptions, wording: RefusalWording, allowPositionals = false): ArgToken[] {
  const words = joinValues(args, options);
  try {
    return parseArgs({ args: words, options, strict: true, allowPositionals, tokens: true }).tokens as ArgToken[];
  } catch (err) {
    throw new Error(refusal(words, options, wording, allowPositionals) ?? (err as Error).message);
  }
}

function joinValues(args: readonly string[], options: StrictOptions): string[] {
  const out: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const word = args[i];
    if (word === '--') {
      out.push(...args.slice(i));
      break;
    }
    const next = args[i + 1];
    if (takesValue(options, word) && next !== undefined && !next.startsWith('--')) {
      out.push(`${word}=${next}`);
      i++;
    } else {
      out.push(word);
    }
  }
  return out;
}

function takesValue(options: StrictOptions, word: string): boolean {
  if (!word.startsWith('--') || word.includes('=')) return false;
  const name = word.slice(2);
  return Object.hasOwn(options, name) && options[name].type === 'string';
}

/**
 * What strict mode refused, found again in the tokens of a lenient parse of the same words (they are the
 * same tokens; strict mode refuses the first bad one in order): Node's own messages are worded for its
 * users, not kopek's.
 */
function refusal(words: string[], options: StrictOptions, wording: RefusalWording, allowPositionals: boolean): string | null {
  const { tokens } = parseArgs({ args: words, options, strict: false, allowPositionals: true, tokens: true });
  for (const t of tokens as ArgToken[]) {
    if (t.kind === 'positional') {
      if (!allowPositionals) return wording.unknown(t.value);
      continue;
    }
    if (t.kind !== 'option') continue;
    if (!Object.hasOwn(options, t.name)) return wording.unknown(words[t.index]);
    const type = options[t.name].type;
    if (type === 'string' && (t.value === undefined || (!t.inlineValue && t.value.length > 1 && t.value.startsWith('-')))) {
      return wording.needsValue(`--${t.name}`);
    }
    if (type === 'boolean' && t.value !== undefined) return wording.takesNoValue(`--${t.name}`);
  }
  return null;
}
