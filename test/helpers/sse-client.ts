import { request, type IncomingMessage } from 'node:http';

/** One parsed SSE frame. */
export interface Frame {
  id?: string;
  event?: string;
  data?: string;
  comment?: string;
}

/** A connected SSE client that parses frames as they arrive. */
export interface SseClient {
  status: number;
  headers: IncomingMessage['headers'];
  frames: Frame[];
  /** Frames with an event name (comments left out). */
  events(): Frame[];
  /** Resolve once `n` events arrived; reject after `timeout_ms`. */
  waitEvents(n: number, timeout_ms?: number): Promise<Frame[]>;
  /** Resolve when the server closes the stream. */
  ended: Promise<void>;
  close(): void;
  res: IncomingMessage;
}

/** Open GET /v1/public/events (or `path`, say with a stream token) with a key (none when null) and optional Last-Event-ID. */
export function openSse(base: string, key: string | null, lastEventId?: string, path = '/v1/public/events'): Promise<SseClient> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { accept: 'text/event-stream' };
    if (key !== null) headers.authorization = `Bearer ${key}`;
    if (lastEventId !== undefined) headers['last-event-id'] = lastEventId;
    const req = request(new URL(path, base), { headers, agent: false }, (res) => {
      const frames: Frame[] = [];
      const waiters: Array<() => void> = [];
      let buf = '';
      let endResolve!: () => void;
      const ended = new Promise<void>((r) => (endResolve = r));
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        buf += chunk;
        let i: number;
        while ((i = buf.indexOf('\n\n')) >= 0) {
          const block = buf.slice(0, i);
          buf = buf.slice(i + 2);
          const f: Frame = {};
          for (const line of block.split('\n')) {
            if (line.startsWith(': ')) f.comment = line.slice(2);
            else {
              const c = line.indexOf(': ');
              (f as Record<string, string>)[line.slice(0, c)] = line.slice(c + 2);
            }
          }
          frames.push(f);
        }
        for (const w of waiters.splice(0)) w();
      });
      res.on('end', endResolve);
      res.on('close', endResolve);
      const client: SseClient = {
        status: res.statusCode ?? 0,
        headers: res.headers,
        frames,
        res,
        ended,
        events: () => frames.filter((f) => f.event !== undefined),
        waitEvents: (n, timeout_ms = 5000) =>
          new Promise((ok, fail) => {
            const timer = setTimeout(() => fail(new Error(`got ${client.events().length} SSE events, not ${n}, within ${timeout_ms} ms`)), timeout_ms);
            const check = (): void => {
              if (client.events().length >= n) {
                clearTimeout(timer);
                ok(client.events());
              } else waiters.push(check);
            };
            check();
          }),
        close: () => req.destroy(),
      };
      resolve(client);
    });
    req.on('error', reject);
    req.end();
  });
}
