import { request as httpRequest, type ClientRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { parseJson } from './command';

/** One webhook event as the stream's webhook format carries it: its sequence number, name and exact body. */
export interface StreamedWebhook {
  seq: number;
  event: string;
  body: string;
}

/** An open event stream, its answer read and its events not yet: `start` begins reading them. */
export interface OpenStream {
  /** The database the server runs on (X-Kopek-Database-Id), and when it was made. */
  databaseId: string;
  databaseCreatedMs: number;
  /** The sequence number the stream starts after (X-Kopek-Stream-After). */
  after: number;
  /** The server's time at its answer (the Date header, whole seconds). */
  serverDateMs: number;
  /** Read events; `ended` settles once the stream ends, with why. */
  start(onEvent: (e: StreamedWebhook) => void): void;
  ended: Promise<string>;
  close(): void;
}

/** Why a stream did not open; `retryable` when the server may answer later (not running, restarting, shutting down). */
export class StreamRefused extends Error {
  constructor(
    message: string,
    readonly retryable: boolean,
  ) {
    super(message);
  }
}

/** How long opening waits for the server's answer, and how long an open stream may stay silent (pings come every 15 s). */
export const STREAM_CLIENT_LIMITS = { open_ms: 10_000, idle_ms: 60_000, error_bytes: 16 * 1024 };

/** Opens GET /v1/public/events?format=webhook, after `lastEventId` if given; resolves once headers are read, else a StreamRefused. */
export function openStream(base: URL, key: string, lastEventId: number | null): Promise<OpenStream> {
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

function opened(req: ClientRequest, res: IncomingMessage, databaseId: string, databaseCreatedMs: number, after: number): OpenStream {
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
    start(onEvent) {
      const parser = sseParser(onEvent);
      res.setEncoding('utf8');
      res.on('data', parser);
      res.resume();
    },
    close() {
      closing = true;
      req.destroy();
    },
  };
}

/** An SSE parser fed in chunks: messages with `id:` and `data:` (one data line each) go to onEvent; comments and other fields are skipped. */
export function sseParser(onEvent: (e: StreamedWebhook) => void): (chunk: string) => void {
  let buf = '';
  let msg: { id?: string; event?: string; data?: string } = {};
  return (chunk) => {
    buf += chunk;
    let i: number;
    while ((i = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, i).replace(/\r$/, '');
      buf = buf.slice(i + 1);
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

function readText(res: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = '';
    res.setEncoding('utf8');
    res.on('data', (c: string) => {
      if (text.length < STREAM_CLIENT_LIMITS.error_bytes) text += c;
    });
    res.on('end', () => resolve(text));
    res.on('error', reject);
  });
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
