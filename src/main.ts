import { COMMANDS } from './cli';
import { VERSION } from './version';

const usage = () => `kopek ${VERSION}: a payment service in one executable

Usage: kopek <command> [options]      (no command = serve)

Commands:
${COMMANDS.map((c) => `  ${c.name.padEnd(10)} ${c.summary}`).join('\n')}

Every command takes --db PATH, --json and --help.
Run 'kopek <command> --help' for its usage and examples.`;

/** argv → `serve` or an admin command; a failure prints one line and exits non-zero. */
export async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (name === '--help' || name === '-h' || name === 'help') {
    process.stdout.write(usage() + '\n');
    return 0;
  }
  if (name === '--version' || name === 'version') {
    process.stdout.write(VERSION + '\n');
    return 0;
  }
  const cmd = name === undefined || name.startsWith('--') ? COMMANDS[0] : COMMANDS.find((c) => c.name === name);
  if (!cmd) {
    process.stderr.write(`kopek: unknown command "${name}"; run 'kopek --help'\n`);
    return 2;
  }
  const args = name === undefined || name.startsWith('--') ? argv : rest;
  if (cmd.name !== 'serve' && (args.includes('--help') || args.includes('-h'))) {
    process.stdout.write(cmd.usage + '\n');
    return 0;
  }
  try {
    return await cmd.run(args);
  } catch (err) {
    process.stderr.write(`kopek ${cmd.name}: ${(err as Error).message}\n`);
    return 1;
  }
}

if (require.main === module || process.env.KOPEK_SEA === '1') {
  main(process.argv.slice(2)).then(
    (code) => {
      process.exitCode = code;
    },
    (err) => {
      process.stderr.write(`kopek: ${(err as Error).message}\n`);
      process.exitCode = 1;
    },
  );
}
