import { main } from '../../src/main';

/** What one in-process run of the command line printed, and its exit code. */
export interface CliResult {
  code: number;
  out: string;
  err: string;
  /** stdout parsed as JSON (for --json runs); undefined when it is not JSON. */
  json: any;
}

/** Run `kopek <argv>` in this process, capturing its output (much cheaper than spawning on a busy machine). */
export async function runCli(argv: string[]): Promise<CliResult> {
  let out = '';
  let err = '';
  const code = await main(argv, { out: (t) => void (out += t), err: (t) => void (err += t) });
  let json: unknown;
  try {
    json = JSON.parse(out);
  } catch {
    json = undefined;
  }
  return { code, out, err, json };
}
