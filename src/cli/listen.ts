import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs, flag, onlyFlags, atMostPositionals, type Args } from '../platform/args';
import { io, parseJson, type Command } from './command';
import { postWebhook, webhookHeaders } from '../money/webhooks/delivery';
import { WEBHOOK_EVENTS } from '../money/webhooks/store';
import { secret as newSecret, WEBHOOK_SECRET_RE } from '../platform/util/ids';
import { request as httpRequest, type ClientRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';

const usage = `Usage: kopek listen --forward-to URL [--events E1,E2] [--secret whs_...] [--url BASE] [--key KEY] [--json]

Forwards every webhook event of the key's shop, from the moment it starts, to URL as a delivery would send
it: the same body, the same headers, a v2 signature (X-PSP-Signature: t=…,v1=…,v2=…). It signs with a
secret it prints first, as the line "Ready. Webhook signing secret: whs_...", then prints one line per
event: the event, its id, and the receiver's status (or error). It needs no webhook endpoint and leaves
none behind. When the server restarts it reconnects by itself: on the same database it goes on after the
last event it got (none lost, none twice); a server that came back on a new database (a restarted
--ephemeral one) is forwarded from that database's first event. SIGINT (Ctrl-C) or SIGTERM stops it.

Options:
  --forward-to URL   the receiver (http or https; a local address is fine)
  --events E1,E2     forward only these webhook events (default: all)
  --secret whs_...   sign with this secret instead of a new one (so a CI receiver can be configured with it)
  --url BASE         the server (default KOPEK_URL, else http://127.0.0.1:8080)
  --key KEY          a test API key of the shop, sk_test_… (default KOPEK_KEY)
  --json             print one JSON object per line
  --help             show this help

Examples:
  kopek listen --forward-to http://127.0.0.1:3000/webhooks/kopek
  kopek listen --forward-to http://127.0.0.1:3000/hook --events payment.succeeded,payment.refunded
  KOPEK_KEY=sk_test_... kopek listen --forward-to http://127.0.0.1:3000/hook --secret whs_ci_fixed_secret_1234 --json`;

/** How long the receiver has to answer one event, as a delivery's default deadline. */
const FORWARD_TIMEOUT_MS = 15_000;
/** Pause before a reconnect: it doubles from the first to the last while the server stays away. */
const RECONNECT_MS = { first: 200, max: 2_000 };

type ListenOptions = ReturnType<typeof listenOptions>;

export const listen: Command = {
  name: 'listen',
  summary: "forward the shop's webhook events to a local URL, signed",
  usage,
  async run(argv) {
    const opts = listenOptions(parseArgs(argv));
    const stop = new AbortController();
    const onSignal = (): void => stop.abort();
    process.once('SIGINT', onSignal);
    process.once('SIGTERM', onSignal);
    try {
      await runListener(opts, stop.signal);
      return 0;
    } finally {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
    }
  },
};

/** Read and check the flags: a live key, a bad URL or an unknown event is refused before anything connects. */
function listenOptions(args: Args) {
  onlyFlags(args, ['forward-to', 'events', 'secret', 'url', 'key']);
  atMostPositionals(args.positional, 0, 'kopek listen --forward-to URL [--events E1,E2]');
  if (args.flags.has('db')) throw new Error('kopek listen talks to a running server, not to a database file: pass --url instead of --db');
  const forward = flag(args, 'forward-to');
  if (!forward) throw new Error('--forward-to URL is required: the address of your webhook receiver, e.g. http://127.0.0.1:3000/webhooks');
  const forwardTo = httpUrl(forward, '--forward-to');
  const base = httpUrl(flag(args, 'url') ?? process.env.KOPEK_URL ?? 'http://127.0.0.1:8080', '--url');
  const key = flag(args, 'key') ?? process.env.KOPEK_KEY ?? '';
  if (key === '') throw new Error('an API key is needed: pass --key sk_test_… or set KOPEK_KEY (kopek serve prints a test key)');
  if (key.startsWith('sk_live_')) throw new Error('kopek listen works with test keys only, and this is a live key (sk_live_…): pass the shop\'s sk_test_ key');
  if (!key.startsWith('sk_test_')) throw new Error(`cannot use --key "${key.slice(0, 12)}…": a test API key starts with sk_test_`);
  const secret = flag(args, 'secret') ?? newSecret('whs_');
  if (!WEBHOOK_SECRET_RE.test(secret)) throw new Error(`cannot use --secret "${secret.slice(0, 12)}…": a webhook secret is whs_ followed by 16 to 200 letters, digits, _ or -`);
  return { base, key, forwardTo, events: eventFilter(flag(args, 'events')), secret, json: args.flags.has('json') };
}

function httpUrl(text: string, name: string): URL {
  if (!URL.canParse(text)) throw new Error(`cannot use ${name} "${text}": not a URL; write it whole, e.g. http://127.0.0.1:8080`);
  const url = new URL(text);
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error(`cannot use ${name} "${text}": only http and https URLs work`);
  return url;
}

function eventFilter(list: string | undefined): ReadonlySet<string> | null {
  if (list === undefined) return null;
  const names = list.split(',').map((s) => s.trim()).filter((s) => s !== '');
  if (names.length === 0) throw new Error('--events needs at least one webhook event, e.g. --events payment.succeeded');
  for (const n of names) {
    if (!(WEBHOOK_EVENTS as readonly string[]).includes(n)) throw new Error(`cannot use event "${n}" in --events: not a webhook event; known: ${WEBHOOK_EVENTS.join(', ')}`);
  }
  return new Set(names);
}

function say(opts: ListenOptions, json: Record<string, unknown>, text: string): void {
  io().out((opts.json ? JSON.stringify(json) : text) + '\n');
}

/** Until `stop`: connect (a refusal is the command's error), print the ready line, forward events in order, reconnect when the stream ends. */
async function runListener(opts: ListenOptions, stop: AbortSignal): Promise<void> {
  // One event at a time, in order, each signed when sent; `stop` cuts the attempt in flight and drops the rest.
  let forwarding = Promise.resolve();
  const first = await openStream(opts.base, opts.key, null);
  const state = { databaseId: first.databaseId, lastSeq: first.after, connectedAtMs: first.serverDateMs };
  const onEvent = (e: StreamedWebhook): void => {
    // Replays start after the last id sent, so nothing comes twice; this guards it all the same.
    if (e.seq <= state.lastSeq) return;
    state.lastSeq = e.seq;
    if (opts.events !== null && !opts.events.has(e.event)) return;
    forwarding = forwarding.then(() => (stop.aborted ? undefined : forward(opts, e, stop)));
  };
  say(opts, { type: 'ready', secret: opts.secret, forward_to: opts.forwardTo.href, url: opts.base.href }, `Ready. Webhook signing secret: ${opts.secret}`);
  if (!opts.json) io().out(`Forwarding the webhook events of the key's shop at ${opts.base.href} to ${opts.forwardTo.href}; Ctrl-C stops.\n`);
  let conn: OpenStream | null = first;
  while (conn && !stop.aborted) {
    conn.start(onEvent);
    const why = await untilEnded(conn, stop);
    if (stop.aborted) break;
    say(opts, { type: 'disconnected', reason: why }, `Lost the stream (${why}); reconnecting…`);
    conn = await reconnect(opts, state, stop);
  }
  // A stop that came while a stream was opening: that stream was never read, and is closed here.
  conn?.close();
  await forwarding;
  say(opts, { type: 'stopped' }, 'Stopped.');
}

function untilEnded(conn: OpenStream, stop: AbortSignal): Promise<string> {
  return new Promise((resolve) => {
    const onStop = (): void => {
      conn.close();
      resolve('stopped');
    };
    stop.addEventListener('abort', onStop, { once: true });
    void conn.ended.then((why) => {
      stop.removeEventListener('abort', onStop);
      resolve(why);
    });
  });
}

// Reopens the stream while the server is away: on the same database after the last event seen; on another the ids mean
// nothing, so one made after the last connect (a restarted --ephemeral server) is read from its start, an older from now.
async function reconnect(opts: ListenOptions, state: { databaseId: string; lastSeq: number; connectedAtMs: number }, stop: AbortSignal): Promise<OpenStream | null> {
  let pause = RECONNECT_MS.first;
  while (!stop.aborted) {
    await sleep(pause, undefined, { signal: stop }).catch(() => {});
    pause = Math.min(pause * 2, RECONNECT_MS.max);
    if (stop.aborted) return null;
    let conn: OpenStream;
    try {
      conn = await openStream(opts.base, opts.key, state.lastSeq);
      if (conn.databaseId !== state.databaseId) {
        conn.close();
        // The Date header has whole seconds: a database made within the second of the last connect counts as newer.
        const newer = conn.databaseCreatedMs >= Math.floor(state.connectedAtMs / 1000) * 1000;
        conn = await openStream(opts.base, opts.key, newer ? 0 : null);
        say(
          opts,
          { type: 'reconnected', database: 'new', database_id: conn.databaseId, from: newer ? 'start' : 'now' },
          `Reconnected to a new database at ${opts.base.href} (the server was restarted without its data); forwarding its events ${newer ? 'from its first one' : 'from now'}.`,
        );
        state.databaseId = conn.databaseId;
      } else {
        say(opts, { type: 'reconnected', database: 'same', after: conn.after }, `Reconnected; going on after event #${conn.after}.`);
      }
    } catch (err) {
      if (err instanceof StreamRefused && err.retryable) continue;
      throw err;
    }
    state.lastSeq = conn.after;
    state.connectedAtMs = conn.serverDateMs;
    return conn;
  }
  return null;
}

async function forward(opts: ListenOptions, e: StreamedWebhook, signal: AbortSignal): Promise<void> {
  // A body that is not JSON is forwarded as it came; the line names no id.
  const id = String((parseJson(e.body) as { id?: unknown } | null | undefined)?.id ?? '');
  const headers = webhookHeaders(id, 'v2', [opts.secret], Math.floor(Date.now() / 1000), e.body);
  const out = await postWebhook({ url: opts.forwardTo, headers, body: e.body, timeout_ms: FORWARD_TIMEOUT_MS, signal });
  if (out.aborted_by_shutdown) return;
  const answer = out.response_code !== null ? String(out.response_code) : `error: ${out.error}`;
  say(
    opts,
    { type: 'event', event: e.event, id, status: out.response_code, error: out.error, latency_ms: out.latency_ms },
    `${e.event}  ${id}  -> ${answer}  (${out.latency_ms} ms)`,
  );
}

/** One webhook event as the stream's webhook format carries it: its sequence number, name and exact body. */
interface StreamedWebhook {
  seq: number;
  event: string;
  body: string;
}

/** An open event stream, its answer read and its events not yet: `start` begins reading them; `ended` settles with why it ended. */
type OpenStream = ReturnType<typeof opened>;

/** Why a stream did not open; `retryable` when the server may answer later (not running, restarting, shutting down). */
class StreamRefused extends Error {
  constructor(message: string, readonly retryable: boolean) {
    super(message);
  }
}

/** How long opening waits for the server's answer, and how long an open stream may stay silent (pings come every 15 s). */
const STREAM_CLIENT_LIMITS = { open_ms: 10_000, idle_ms: 60_000, error_bytes: 16 * 1024 };

/** Opens GET /v1/public/events?format=webhook, after `lastEventId` if given; resolves once headers are read, else a StreamRefused. */
function openStream(base: URL, key: string, lastEventId: number | null): Promise<OpenStream> {
  // Keep the base's path: a server behind a proxy's prefix is reached there, as `kopek trigger` reaches it.
  const url = new URL(`${base.href.replace(/\/+$/, '')}/v1/public/events?format=webhook`);
  const headers: Record<string, string> = { Accept: 'text/event-stream', Authorization: `Bearer ${key}` };
  if (lastEventId !== null) headers['Last-Event-ID'] = String(lastEventId);
  const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    // A timer, not an abort signal: a signal would cut the stream itself once it fired.
    const timer = setTimeout(() => req.destroy(Object.assign(new Error('no answer'), { code: 'OPEN_TIMEOUT' })), STREAM_CLIENT_LIMITS.open_ms);
    const req = send(url, { headers, agent: false }, (res) => {
      clearTimeout(timer);
      if (res.statusCode !== 200) {
        readText(res).then((text) => reject(refusal(base, res.statusCode ?? 0, text)), () => reject(refusal(base, res.statusCode ?? 0, '')));
        return;
      }
      const id = res.headers['x-kopek-database-id'];
      const created = Date.parse(String(res.headers['x-kopek-database-created'] ?? ''));
      const after = Number(res.headers['x-kopek-stream-after']);
      if (!String(res.headers['content-type'] ?? '').startsWith('text/event-stream') || typeof id !== 'string' || !Number.isSafeInteger(after) || Number.isNaN(created)) {
        res.destroy();
        reject(new StreamRefused(`cannot listen: ${base.origin} answered but is not a kopek server of this version (its event stream names no database); check --url`, false));
        return;
      }
      resolve(opened(req, res, id, created, after));
    });
    req.on('error', (err: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      reject(connectError(base, err));
    });
    req.end();
  });
}

function opened(req: ClientRequest, res: IncomingMessage, databaseId: string, databaseCreatedMs: number, after: number) {
  let endWith!: (why: string) => void;
  const ended = new Promise<string>((resolve) => (endWith = resolve));
  let closing = false;
  // The open's deadline is over once the answer is here; silence past the idle limit is a lost connection.
  req.setTimeout(STREAM_CLIENT_LIMITS.idle_ms, () => req.destroy(new Error(`no data for ${STREAM_CLIENT_LIMITS.idle_ms / 1000} s`)));
  res.on('end', () => endWith('the server closed the stream'));
  res.on('close', () => endWith(closing ? 'closed' : 'the connection closed'));
  res.on('error', (err) => endWith(err.message));
  req.on('error', (err) => endWith(err.message));
  res.pause();
  return {
    databaseId,
    databaseCreatedMs,
    after,
    serverDateMs: Date.parse(String(res.headers.date ?? '')) || Date.now(),
    ended,
    start(onEvent: (e: StreamedWebhook) => void): void {
      const parser = sseParser(onEvent);
      res.setEncoding('utf8');
      res.on('data', parser);
      res.resume();
    },
    close(): void {
      closing = true;
      req.destroy();
    },
  };
}

/** An SSE parser fed in chunks: messages with `id:` and `data:` (one data line each) go to onEvent; comments and other fields are skipped. */
function sseParser(onEvent: (e: StreamedWebhook) => void): (chunk: string) => void {
  let buf = '';
  let msg: { id?: string; event?: string; data?: string } = {};
  return (chunk) => {
    const lines = (buf + chunk).split('\n');
    buf = lines.pop()!;
    for (const line of lines.map((l) => l.replace(/\r$/, ''))) {
      if (line === '') {
        const seq = Number(msg.id);
        if (msg.data !== undefined && Number.isSafeInteger(seq)) onEvent({ seq, event: msg.event ?? 'message', body: msg.data });
        msg = {};
        continue;
      }
      if (line.startsWith(':')) continue;
      const colon = line.indexOf(':');
      const name = colon < 0 ? line : line.slice(0, colon);
      const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
      if (name === 'id' || name === 'event' || name === 'data') msg[name] = value;
    }
  };
}

async function readText(res: IncomingMessage): Promise<string> {
  let text = '';
  res.setEncoding('utf8');
  for await (const c of res) if (text.length < STREAM_CLIENT_LIMITS.error_bytes) text += c;
  return text;
}

/** A refusal in words a developer acts on: the server's own message, and what to change. */
function refusal(base: URL, status: number, text: string): StreamRefused {
  // Not kopek's error shape: the status says enough.
  const message = String((parseJson(text) as { error?: { message?: string } } | null | undefined)?.error?.message ?? '');
  const said = message ? `: ${message}` : '';
  if (status === 401) return new StreamRefused(`cannot listen: the server refused the key (401${said}); check --key (or KOPEK_KEY)`, false);
  if (status === 403) return new StreamRefused(`cannot listen: the key may not read the event stream (403${said}); use the shop's test key`, false);
  if (status === 404) return new StreamRefused(`cannot listen: ${base.origin} has no kopek event stream (404); check --url (or KOPEK_URL)`, false);
  if (status === 503 || status === 502) return new StreamRefused(`cannot listen: the server at ${base.origin} is not ready (${status}${said}); try again`, true);
  return new StreamRefused(`cannot listen: the server at ${base.origin} answered ${status}${said}`, status >= 500);
}

function connectError(base: URL, err: NodeJS.ErrnoException): StreamRefused {
  const code = err.code ?? err.name;
  if (code === 'ECONNREFUSED' || code === 'ECONNRESET') {
    return new StreamRefused(`cannot listen: no server answers at ${base.origin} (${code}); start one with \`kopek serve\`, or pass --url (or KOPEK_URL)`, true);
  }
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return new StreamRefused(`cannot listen: the host of ${base.origin} is unknown (${code}); check --url (or KOPEK_URL)`, false);
  if (code === 'OPEN_TIMEOUT') return new StreamRefused(`cannot listen: ${base.origin} did not answer within ${STREAM_CLIENT_LIMITS.open_ms / 1000} s; check --url (or KOPEK_URL)`, true);
  return new StreamRefused(`cannot listen: cannot reach ${base.origin} (${code}: ${err.message})`, true);
}
