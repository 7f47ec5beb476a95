import { cliCommands } from './cli';
import { startApp } from './app';
import { io, processIo, withIo, type Io } from './cli/command';
import { VERSION } from './platform/version';
import { didYouMean } from './platform/args';
import { redactUrl } from './platform/redact-url';

const COMMANDS = cliCommands(startApp);

const usage = () => `kopek ${VERSION}: a payment service in one executable

Usage: kopek <command> [options]      (no command = serve)

Commands:
${COMMANDS.map((c) => `  ${c.name.padEnd(10)} ${c.summary}`).join('\n')}

Every command takes --db PATH, --json and --help.
Run 'kopek <command> --help' for its usage and examples; 'kopek --version' (or -v) names the
version and the Node.js it runs on.`;

/** argv → `serve` or an admin command; a failure prints one line and exits non-zero. `target` replaces stdout/stderr. */
export async function main(argv: string[], target: Io = processIo): Promise<number> {
  return withIo(target, () => run(argv));
}

async function run(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  const { out, err } = io();
  if (name === '--help' || name === '-h' || name === 'help') {
    out(usage() + '\n');
    return 0;
  }
  if (name === '--version' || name === '-v' || name === 'version') {
    out(`kopek ${VERSION} (node ${process.version})\n`);
    return 0;
  }
  const implicit = name === undefined || name.startsWith('-');
  const cmd = implicit ? COMMANDS[0] : COMMANDS.find((c) => c.name === name);
  if (!cmd) {
    const near = didYouMean(name, COMMANDS.map((c) => c.name));
    err(`kopek: unknown command "${name}"${near ? `; did you mean "kopek ${near}"?` : ''}; run 'kopek --help'\n`);
    return 2;
  }
  const args = implicit ? argv : rest;
  if (args.includes('--help') || args.includes('-h')) {
    out(cmd.usage + '\n');
    return 0;
  }
  try {
    return await cmd.run(args);
  } catch (e) {
    // Whatever a command's error quotes, a database URL in it shows without its password.
    err(`kopek ${cmd.name}: ${redactUrl((e as Error).message.split('\n')[0])}\n`);
    return 1;
  }
}

// In the executable src/sea.ts is the entry and calls main; KOPEK_BUNDLE keeps this module from a second run.
declare const KOPEK_BUNDLE: boolean | undefined;
if (typeof KOPEK_BUNDLE === 'undefined' && require.main === module) exitWith(main(process.argv.slice(2)));

/** Set the process's exit code from a run's result; a run that throws prints one line and exits 1. */
export function exitWith(run: Promise<number>): void {
  run.then(
    (code) => {
      process.exitCode = code;
    },
    (err) => {
      process.stderr.write(`kopek: ${redactUrl((err as Error).message)}\n`);
      process.exitCode = 1;
    },
  );
}
