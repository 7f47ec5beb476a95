import { OPTIONS } from '../platform/config';

type OptionSpec = (typeof OPTIONS)[number];

/** An option's default as `kopek serve --help` shows it (the README's table shows the same values). */
function defaultOf(o: OptionSpec): string {
  if (o.def === null) return '-';
  if (Array.isArray(o.def)) return o.def.length ? o.def.join(',') : '(empty)';
  return String(o.def);
}

/**
 * The option lines of `kopek serve --help`: flag, default and meaning in aligned columns under a header,
 * each meaning followed by the environment variable that sets it.
 */
export function optionsHelp(): string {
  const rows = [
    ...OPTIONS.map((o) => [o.kind === 'bool' ? `${o.flag}, --no-${o.flag.slice(2)}` : `${o.flag} VALUE`, defaultOf(o), `${o.help} [${o.env}]`]),
    ['--help', '-', 'show this help'],
  ];
  const header = ['option', 'default', 'meaning [environment variable]'];
  const w0 = Math.max(header[0].length, ...rows.map((r) => r[0].length));
  const w1 = Math.max(header[1].length, ...rows.map((r) => r[1].length));
  return [header, ...rows].map((r) => `  ${r[0].padEnd(w0)}  ${r[1].padEnd(w1)}  ${r[2]}`).join('\n');
}
