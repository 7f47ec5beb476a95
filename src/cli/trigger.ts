import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { parseArgs, flag, flagValues, atMostPositionals } from '../platform/args';
import { io, output, parseJson, type Command } from './command';
import { isTriggerEvent, TRIGGER_EVENTS, TRIGGER_EVENT_NAMES, TRIGGER_NUMERIC_FIELDS, TRIGGER_SET_FIELDS } from '../banks/simulator/trigger-events';

/** Where the command finds the server when neither --url nor KOPEK_URL names it: `kopek serve`'s default address. */
const DEFAULT_URL = 'http://127.0.0.1:8080';
/** How long the server may take to answer; a trigger commits in milliseconds, so longer means something is wrong. */
const TIMEOUT_MS = 30_000;
/** The largest answer read: a trigger's answer is a few kilobytes. */
const ANSWER_MAX_BYTES = 4 * 1024 * 1024;
const KNOWN_FLAGS = ['url', 'key', 'set', 'list', 'json', 'help'];
/** A value --set sends as a JSON number for a numeric field; anything else goes as a string, for the server to refuse by name. */
const NUMBER = /^-?[0-9]+(\.[0-9]+)?$/;
const SET_FIELDS = Object.entries(TRIGGER_SET_FIELDS)
  .map(([kind, fields]) => `  ${`${kind}.*`.padEnd(16)}${fields.map((f) => (f === 'metadata' ? 'metadata.KEY' : f)).join(', ')}`)
  .join('\n');

const usage = `Usage:
  kopek trigger EVENT [--set FIELD=VALUE]... [--url BASE] [--key KEY] [--json]
  kopek trigger --list [--json]

Arguments:
  EVENT   a webhook event kopek sends: ${TRIGGER_EVENT_NAMES.slice(0, 3).join(', ')}, …
          (kopek trigger --list names every one, with what it makes)

Makes EVENT happen now in the key's shop on a running server (POST /v1/test/trigger): it creates the
objects the event needs and drives them through the same paths as a buyer's payment, so the webhook goes
to the shop's endpoints as any other (delivery log, retries) and the event stream carries it. The shop's
test clock does not move. Test keys only. Prints the event's id and the objects made; exits 1 with one
line saying what to do when it cannot.

--set FIELD=VALUE (repeatable) gives a field of the object the event makes, checked as that object's create
checks it. The fields each event's object takes:
${SET_FIELDS}
An amount must lead to the event at the test bank (payment.succeeded: a kopeck part of 00 or 05 to 99,
payment.failed: 01 or 02; docs/testing.md has them all); any other field is refused by name.

Options:
  --set F=V    set field F of the event's object to V (repeatable; metadata.KEY=VALUE adds one metadata key)
  --url BASE   the server's address (default KOPEK_URL, else ${DEFAULT_URL})
  --key KEY    a test key, sk_test_… (default KOPEK_KEY)
  --list       list the events, one line each (needs no server)
  --json       print one JSON object per line: the server's answer, or one per event with --list
  --help       show this help

Examples:
  kopek trigger payment.succeeded --key sk_test_…
  KOPEK_URL=http://127.0.0.1:8081 KOPEK_KEY=sk_test_… kopek trigger subscription.past_due
  kopek trigger payment.refunded --json
  kopek trigger payment.succeeded --set amount=25000 --set order_id=A-1001 --set metadata.cart=42
  kopek trigger --list`;

interface TriggerAnswer {
  event: string;
  event_id: string;
  webhooks: Array<{ id: string; event: string }>;
  [object: string]: unknown;
}

export const trigger: Command = {
  name: 'trigger',
  summary: "make a webhook event happen now in a test key's shop (on a running server)",
  usage,
  async run(argv) {
    const args = parseArgs(argv, ['json', 'help', 'list']);
    for (const k of args.flags.keys()) {
      if (!KNOWN_FLAGS.includes(k)) throw new Error(`unknown option --${k}; kopek trigger talks to a running server (--url, --key), see kopek trigger --help`);
    }
    if (args.flags.has('list')) {
      atMostPositionals(args.positional, 0, 'kopek trigger --list [--json]');
      if (args.flags.has('set')) throw new Error('cannot list events with --set: --set gives a field of a triggered event, kopek trigger EVENT --set FIELD=VALUE');
      const width = Math.max(...TRIGGER_EVENT_NAMES.map((e) => e.length)) + 2;
      const lines = TRIGGER_EVENT_NAMES.map((e) =>
        args.flags.has('json') ? JSON.stringify({ event: e, description: TRIGGER_EVENTS[e] }) : `${e.padEnd(width)}${TRIGGER_EVENTS[e]}`,
      );
      io().out(lines.join('\n') + '\n');
      return 0;
    }
    atMostPositionals(args.positional, 1, 'kopek trigger EVENT [--set FIELD=VALUE]... [--url BASE] [--key KEY] [--json]');
    const [event] = args.positional;
    if (!event) throw new Error('cannot trigger: name an EVENT, e.g. kopek trigger payment.succeeded (kopek trigger --list shows them all)');
    if (!isTriggerEvent(event)) throw new Error(`cannot trigger "${event.slice(0, 64)}": kopek sends no such event; kopek trigger --list shows the events`);
    const set = setObject(event, flagValues(args, 'set'));
    const base = baseUrl(event, flag(args, 'url') ?? process.env.KOPEK_URL ?? DEFAULT_URL);
    const key = testKey(event, flag(args, 'key') ?? process.env.KOPEK_KEY);
    const answer = await post(event, base, key, set);
    output(args, answer, describeAnswer(answer));
    return 0;
  },
};

/** The request's `set` from --set words: numeric fields as numbers, metadata.KEY=VALUE into `metadata`; the server checks the fields. */
function setObject(event: string, words: string[]): Record<string, unknown> | undefined {
  if (words.length === 0) return undefined;
  const set: Record<string, unknown> = {};
  const metadata: Record<string, string> = {};
  const seen = new Set<string>();
  for (const word of words) {
    const eq = word.indexOf('=');
    if (eq <= 0) throw new Error(`cannot trigger ${event}: --set "${word.slice(0, 100)}" is not FIELD=VALUE; write it like --set amount=25000 or --set metadata.cart=42`);
    const [name, value] = [word.slice(0, eq), word.slice(eq + 1)];
    if (seen.has(name)) throw new Error(`cannot trigger ${event}: --set ${name.slice(0, 100)} is given twice; give each field once`);
    seen.add(name);
    if (name === 'metadata' || name === 'metadata.') throw new Error(`cannot trigger ${event}: --set ${name}=… names no metadata key; write --set metadata.KEY=VALUE`);
    if (name.startsWith('metadata.')) metadata[name.slice('metadata.'.length)] = value;
    else set[name] = TRIGGER_NUMERIC_FIELDS.includes(name) && NUMBER.test(value) ? Number(value) : value;
  }
  if (Object.keys(metadata).length > 0) set.metadata = metadata;
  return set;
}

/** The server's base address, checked before anything is sent (a typo is named as one, not as a network error). */
function baseUrl(event: string, raw: string): string {
  if (!URL.canParse(raw)) throw new Error(`cannot trigger ${event}: --url "${raw.slice(0, 100)}" is not an address; pass one like ${DEFAULT_URL} (or set KOPEK_URL)`);
  const u = new URL(raw);
  if (u.protocol !== 'http:' && u.protocol !== 'https:') {
    throw new Error(`cannot trigger ${event}: --url "${raw.slice(0, 100)}" is not an http:// or https:// address; pass one like ${DEFAULT_URL}`);
  }
  // A path is kept (a server behind a proxy's prefix); the route is added after it.
  return u.toString().replace(/\/+$/, '');
}

/** The key, refused here when it is missing or not a test key; the secret itself is never printed. */
function testKey(event: string, key: string | undefined): string {
  if (!key) throw new Error(`cannot trigger ${event}: no API key; pass --key sk_test_… or set KOPEK_KEY`);
  if (key.startsWith('sk_live_')) {
    throw new Error(`cannot trigger ${event} with a live key: the trigger works in test mode only; pass a test key (sk_test_…)`);
  }
  if (!key.startsWith('sk_test_')) throw new Error(`cannot trigger ${event}: --key must be a test key that starts with sk_test_`);
  return key;
}

/** POST the trigger; every way it can fail becomes one line naming what to do. */
async function post(event: string, base: string, key: string, set: Record<string, unknown> | undefined): Promise<TriggerAnswer> {
  let res: { status: number; text: string };
  try {
    res = await postJson(new URL(`${base}/v1/test/trigger`), key, JSON.stringify(set ? { event, set } : { event }));
  } catch (err) {
    throw new Error(`cannot trigger ${event}: ${unreachable(base, err)}`);
  }
  const body = parseJson(res.text);
  const answer = body as TriggerAnswer | undefined;
  if (res.status === 201 && typeof answer?.event === 'string' && typeof answer.event_id === 'string' && Array.isArray(answer.webhooks)) return answer;
  const error = (body as { error?: { code?: unknown; message?: unknown; param?: unknown } } | undefined)?.error;
  if (!error || typeof error.code !== 'string' || typeof error.message !== 'string') {
    throw new Error(`cannot trigger ${event}: ${base} does not answer as a kopek server (HTTP ${res.status} to POST /v1/test/trigger); check --url or KOPEK_URL`);
  }
  // The server's messages already start with the failed action ("Cannot trigger …"); others get it in front.
  const said = error.message.startsWith('Cannot ') ? 'c' + error.message.slice(1) : `cannot trigger ${event}: ${error.message}`;
  throw new Error(`${said} (${res.status} ${error.code})${hintFor(res.status, error.code, error.param)}`);
}

// node:http(s), not fetch: fetch refuses some ports outright (6000, 5060, …) where a server may listen, and hides the socket's
// error code that unreachable() words. Redirects are not followed.
function postJson(url: URL, key: string, payload: string): Promise<{ status: number; text: string }> {
  const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const req = send(url, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) } }, (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (c: Buffer) => {
        size += c.length;
        if (size > ANSWER_MAX_BYTES) req.destroy(new Error(`an answer over ${ANSWER_MAX_BYTES} bytes`));
        else chunks.push(c);
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.setTimeout(TIMEOUT_MS, () => req.destroy(Object.assign(new Error('timed out'), { code: 'ETIMEDOUT' })));
    req.on('error', reject);
    req.end(payload);
  });
}

function hintFor(status: number, code: string, param: unknown): string {
  if (typeof param === 'string' && param.startsWith('set.')) return `; check --set ${param.slice('set.'.length).split('.')[0]}`;
  if (status === 401) return '; check --key or KOPEK_KEY: a key belongs to one server and its database';
  if (status === 404) return '; a live key or a server without the trigger answers so: check --key and the server version';
  if (code === 'scope_required') return '; give the key that scope (kopek key create --scopes …) or use another key';
  return '';
}

/** Why the server could not be reached, in words a developer acts on. */
function unreachable(base: string, err: unknown): string {
  const code = (err as { code?: string }).code;
  if (code === 'ETIMEDOUT') return `${base} did not answer within ${TIMEOUT_MS / 1000} s; check --url and that the server is not stuck`;
  if (code === 'ECONNREFUSED') return `nothing answers at ${base} (connection refused); start the server (kopek serve) or pass --url`;
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return `cannot find the host of ${base}; check --url or KOPEK_URL`;
  return `cannot reach ${base} (${code ?? (err as Error).message}); check --url and that the server runs`;
}

function describeAnswer(a: TriggerAnswer): string[] {
  const lines = [`triggered ${a.event}  ${a.event_id}`];
  for (const name of ['payment', 'refund', 'payout', 'subscription', 'token']) {
    const o = a[name] as { id?: string; status?: string; amount?: number } | undefined;
    if (!o) continue;
    lines.push(`  ${name.padEnd(14)}${o.id}  ${o.status}${o.amount !== undefined ? `  amount ${o.amount}` : ''}`);
  }
  const width = Math.max(...a.webhooks.map((w) => w.event.length)) + 2;
  for (const w of a.webhooks) lines.push(`  webhook sent  ${w.event.padEnd(width)}${w.id}`);
  return lines;
}
