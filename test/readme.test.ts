import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';

// README.md's shell blocks, run as a newcomer runs them: a fresh `npm start` on an empty database, then, in
// another shell, the `export` line it printed and every block after it, in order, each command as written.
// The README once told its reader to replay a paid payment's Idempotency-Key (the next call answered 409) and
// suggested a receiver that printed nothing; this test is what keeps every block runnable.
//
// Two commands of the first block are not run here, for their own reasons: `npm ci` (this tree is installed,
// and reinstalling would pull node_modules from under the suite) and `npm test` (this test is part of it).
// Its `npm start` is: in a scratch folder that links the project's files, so that the data folder and the
// files the walk writes stay out of the project, on a port the system picks (KOPEK_PORT=0), which the
// printed `export` line carries to every later command. The README's webhook receiver listens on `PORT`, else
// 3000: the walk once started it on 3000, and `npm test` failed wherever anything listened there. The walk's
// shell gets a port the system picked instead, and the README's answers that name the receiver's address
// (`127.0.0.1:3000`) are read with that port.

const ROOT = join(__dirname, '..');
const README = readFileSync(join(ROOT, 'README.md'), 'utf8');

/** One command of a block (continuation lines joined as written) and the `# …` lines under it: what it prints. */
interface Command {
  block: number;
  text: string;
  expected: string[];
}

/** Every ```sh block of the README, in order. */
function shellBlocks(markdown: string): string[] {
  return [...markdown.matchAll(/^```sh\n([\s\S]*?)^```$/gm)].map((m) => m[1]);
}

/** A block's commands: a line ending in `\` continues on the next; comment lines belong to the command above. */
function commands(block: string, index: number): Command[] {
  const out: Command[] = [];
  const lines = block.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    if (line.trim() === '') continue;
    if (line.startsWith('#')) {
      out.at(-1)?.expected.push(line.replace(/^# ?/, ''));
      continue;
    }
    let text = line;
    while (text.endsWith('\\') && i + 1 < lines.length) text += '\n' + lines[++i];
    out.push({ block: index, text, expected: [] });
  }
  return out;
}

/** A README sample answer (`…` where it leaves things out) as the JSON it abbreviates, or undefined. */
function sampleJson(text: string): unknown {
  const cleaned = text
    .replace(/,\s*…\s*,/g, ',')
    .replace(/,\s*…(?=\s*[}\]])/g, '')
    .replace(/([{[])\s*…\s*(?=[}\]])/g, '$1');
  try {
    return JSON.parse(cleaned);
  } catch {
    return undefined;
  }
}

// Numbers the README says depend on how long the reader waits between two commands (the test bank answers 2 s
// after a session opens, and settles a refund 2 s after it is made).
const TIMING = new Set(['jobs_run', 'balance', 'available']);

/** Where `actual` differs from the README's sample: every key shown is there, every stable value is equal. */
function differences(expected: unknown, actual: unknown, path = ''): string[] {
  if (Array.isArray(expected)) {
    if (!Array.isArray(actual)) return [`${path}: an array in the README, ${JSON.stringify(actual)} here`];
    return expected.flatMap((e, i) => (i < actual.length ? differences(e, actual[i], `${path}[${i}]`) : [`${path}[${i}]: missing`]));
  }
  if (expected !== null && typeof expected === 'object') {
    if (actual === null || typeof actual !== 'object') return [`${path}: an object in the README, ${JSON.stringify(actual)} here`];
    return Object.entries(expected).flatMap(([k, v]) =>
      k in (actual as object) ? differences(v, (actual as Record<string, unknown>)[k], `${path}.${k}`) : [`${path}.${k}: missing`],
    );
  }
  const key = path.split('.').at(-1) ?? '';
  // Generated values (ids, times, bank references) differ on every run; the README elides or shows one example.
  const generated = typeof expected === 'string' && (expected.includes('…') || /^\d{4}-\d\d-\d\dT/.test(expected) || /^\d{6,}$/.test(expected));
  if (generated || (typeof expected === 'number' && TIMING.has(key))) return [];
  return expected === actual ? [] : [`${path}: ${JSON.stringify(expected)} in the README, ${JSON.stringify(actual)} here`];
}

/** What one command printed, checked against the lines the README shows under it. */
function check(c: Command, output: string, code: number): string[] {
  const where = `block ${c.block + 1}, ${JSON.stringify(c.text.split('\n')[0])}`;
  const problems: string[] = [];
  const timedOut = code === 28 && /--max-time /.test(c.text);
  if (code !== 0 && !timedOut) problems.push(`${where}: exit code ${code}: ${output.trim().slice(0, 400)}`);
  // The receiver runs in the background: its lines land in whichever command's output is being read.
  const own = output
    .split('\n')
    .filter((l) => !l.startsWith('verified '))
    .join('\n')
    .trim();
  const sample = c.expected.length > 0 && c.expected[0].startsWith('{') ? sampleJson(c.expected[0]) : undefined;
  if (own.startsWith('{') && own.endsWith('}')) {
    let body: any;
    try {
      body = JSON.parse(own);
    } catch {
      return [...problems, `${where}: printed something that is not JSON: ${own.slice(0, 300)}`];
    }
    if (sample !== undefined) problems.push(...differences(sample, body).map((d) => `${where}: ${d}`));
    else if (body.error) problems.push(`${where}: answered an error the README does not show: ${own.slice(0, 300)}`);
  } else if (sample !== undefined) {
    problems.push(`${where}: the README shows a JSON answer, this printed: ${own.slice(0, 300)}`);
  } else {
    // Lines the README shows verbatim (not elided, not a remark in brackets) are printed as they are.
    const lines = own.split('\n');
    for (const e of c.expected) {
      if (e.trim() === '' || e.includes('…') || e.startsWith('(') || e.startsWith('{')) continue;
      if (!lines.includes(e)) problems.push(`${where}: the README shows "${e}", not printed`);
    }
  }
  return problems;
}

/** A port the system picks as free now (listen on port 0, read it, close): for a process the README starts on `PORT`. */
async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
  const { port } = probe.address() as AddressInfo;
  await new Promise((r) => probe.close(r));
  return port;
}

/** A child's stdout and stderr as they arrive. */
function collect(p: ChildProcess): () => string {
  let text = '';
  p.stdout?.on('data', (d) => (text += d));
  p.stderr?.on('data', (d) => (text += d));
  return () => text;
}

async function waitFor(what: string, ok: () => boolean, ms: number): Promise<void> {
  const end = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Stop a detached child and everything it started (its process group, which outlives it: the README's receiver). */
async function stopGroup(p: ChildProcess, signal: NodeJS.Signals): Promise<void> {
  const running = p.exitCode === null && p.signalCode === null;
  const exited = new Promise((r) => (running ? p.once('exit', r) : r(undefined)));
  try {
    process.kill(-p.pid!, signal);
  } catch {
    return; // the group is gone
  }
  await Promise.race([exited, new Promise((r) => setTimeout(r, 10_000).unref())]);
}

/**
 * The environment of a reader's fresh shell: no KOPEK_ settings from whoever runs the suite, and not the test
 * runner's NODE_OPTIONS (its loader would stay in every `node` the README starts, and keep them alive on SIGTERM).
 */
function freshEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  const inherited = (k: string) => k.startsWith('KOPEK_') || k.startsWith('NODE_TEST') || k.startsWith('TSX') || k === 'NODE_OPTIONS';
  for (const [k, v] of Object.entries(process.env)) if (!inherited(k)) env[k] = v;
  return { ...env, ...extra };
}

test("every shell block of the README runs verbatim, in order, against a fresh server (the webhook section replayed a paid payment's key; its receiver took port 3000 whether free or not)", { timeout: 600_000 }, async () => {
  const blocks = shellBlocks(README);
  assert.match(blocks[0], /^npm ci && npm start .*\n[\s\S]*^npm test /m, 'the first block installs and starts');
  assert.match(README, /paste the `export` line it printed/, 'the README tells the reader to paste the export line');

  const dir = mkdtempSync(join(tmpdir(), 'kopek-readme-'));
  for (const name of ['src', 'node_modules', 'package.json', 'tsconfig.json', 'schema.sql', 'examples']) symlinkSync(join(ROOT, name), join(dir, name));
  const server = spawn('npm', ['start'], { cwd: dir, env: freshEnv({ KOPEK_PORT: '0' }), detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  const serverOut = collect(server);
  let shell: ChildProcess | undefined;
  try {
    await waitFor('the export line of npm start', () => /^ {2}shell {5}export .*$/m.test(serverOut()), 120_000);
    const exportLine = /^ {2}shell {5}(export .*)$/m.exec(serverOut())![1];

    const hookPort = await freePort();
    const all = blocks.slice(1).flatMap((b, i) => commands(b, i + 1));
    for (const c of all) c.expected = c.expected.map((e) => e.replaceAll('127.0.0.1:3000', `127.0.0.1:${hookPort}`));
    const script = ['shopt -s expand_aliases', exportLine];
    all.forEach((c, i) => script.push(`printf '\\n@@readme-begin ${i}\\n'`, c.text, `printf '\\n@@readme-end ${i} %d\\n' $?`));
    writeFileSync(join(dir, 'walk.sh'), script.join('\n') + '\n');
    shell = spawn('bash', ['walk.sh'], { cwd: dir, env: freshEnv({ PORT: String(hookPort) }), detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    const shellOut = collect(shell);
    const done = new Promise<number>((r) => shell!.once('exit', (code) => r(code ?? -1)));
    await waitFor('the last command', () => shellOut().includes(`@@readme-end ${all.length - 1} `), 480_000);
    await done;
    // The receiver the README starts in the background still runs, in the shell's process group.
    await stopGroup(shell, 'SIGTERM');

    const text = shellOut();
    const problems: string[] = [];
    all.forEach((c, i) => {
      const m = new RegExp(`@@readme-begin ${i}\\n([\\s\\S]*?)\\n@@readme-end ${i} (\\d+)\\n`).exec(text);
      if (!m) problems.push(`block ${c.block + 1}: ${JSON.stringify(c.text.split('\n')[0])} did not run`);
      else problems.push(...check(c, m[1], Number(m[2])));
    });
    assert.deepEqual(problems, [], text);
    // The receiver prints from the background as the delivery arrives: its line may follow curl's answer, which
    // ends without a newline, on the same line (a fast delivery did so in CI).
    assert.match(text, /verified payment\.succeeded evt_\S+: [0-9a-f-]{36} succeeded$/m, 'the receiver printed the verified event');
    assert.match(text, new RegExp(`"url":"http://127\\.0\\.0\\.1:${hookPort}/hook"`), 'the delivery went to the receiver on the port the system picked');
  } finally {
    if (shell) await stopGroup(shell, 'SIGKILL');
    await stopGroup(server, 'SIGTERM');
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the README\'s receiver is the file it runs: docs/webhooks.md shows examples/webhook-receiver.js as it is', () => {
  const docs = readFileSync(join(ROOT, 'docs', 'webhooks.md'), 'utf8');
  const block = /### A receiver that verifies v2[\s\S]*?```js\n([\s\S]*?)```/.exec(docs)?.[1];
  assert.equal(block, readFileSync(join(ROOT, 'examples', 'webhook-receiver.js'), 'utf8'));
  assert.match(block!, /console\.log\(`verified \$\{event\.event\}/, 'it prints each verified event');
});
