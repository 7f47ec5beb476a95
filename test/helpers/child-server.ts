import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';

const ROOT = join(__dirname, '..', '..');

/** `kopek serve` running as a child process, as an operator runs it. */
export interface ChildServer {
  proc: ChildProcess;
  url: string;
  /** Everything written to stderr so far. */
  stderr(): string;
  /** Resolves with the exit code (or the signal name) when the process ends. */
  exited: Promise<number | string>;
}

/** Spawn `node --import tsx src/main.ts serve --port 0 …` and wait for its "listening on" line. */
export function spawnServer(args: string[], env: NodeJS.ProcessEnv = {}): Promise<ChildServer> {
  const proc = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'src', 'main.ts'), 'serve', '--port', '0', ...args], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let err = '';
  const exited = new Promise<number | string>((resolve) => proc.on('exit', (code, signal) => resolve(code ?? signal ?? -1)));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start in 20 s: ${err}`)), 20_000);
    proc.stderr!.on('data', (chunk: Buffer) => {
      err += chunk.toString();
      const m = /listening on (http:\/\/\S+)/.exec(err);
      if (m) {
        clearTimeout(timer);
        resolve({ proc, url: m[1], stderr: () => err, exited });
      }
    });
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`server exited (${code}) before listening: ${err}`));
    });
  });
}
