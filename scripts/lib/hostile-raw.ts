import { connect, type Socket } from 'node:net';
import type { Verdict } from './fuzz-model';

/** What the server wrote back on a raw connection before closing it (or before `wait_ms`). */
export interface RawOutcome {
  /** Status of the first response, 0 when none came. */
  status: number;
  text: string;
  closed: boolean;
}

/** Write `chunks` on a fresh TCP connection (with `gap_ms` between them) and collect the answer. */
export function rawExchange(base: string, chunks: Buffer[], o: { gap_ms?: number; wait_ms?: number } = {}): Promise<RawOutcome> {
  const u = new URL(base);
  return new Promise((resolve) => {
    const socket: Socket = connect({ host: u.hostname.replace(/^\[|\]$/g, ''), port: Number(u.port) });
    let data = Buffer.alloc(0);
    let done = false;
    const finish = (closed: boolean): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      const text = data.toString('latin1');
      const m = /^HTTP\/1\.[01] (\d{3})/.exec(text);
      resolve({ status: m ? Number(m[1]) : 0, text, closed });
    };
    const timer = setTimeout(() => finish(false), o.wait_ms ?? 5_000);
    socket.on('data', (c: Buffer) => (data = Buffer.concat([data, c])));
    socket.on('close', () => finish(true));
    socket.on('error', () => finish(true));
    socket.on('connect', async () => {
      for (const c of chunks) {
        if (socket.destroyed) return;
        socket.write(c);
        if (o.gap_ms) await new Promise((r) => setTimeout(r, o.gap_ms));
      }
    });
  });
}

function post(path: string, body: Buffer, key: string, extra = ''): Buffer {
  const head = `POST ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n${extra}\r\n`;
  return Buffer.concat([Buffer.from(head, 'latin1'), body]);
}

function expectStatus(name: string, got: RawOutcome, want: number[], code?: string): Verdict {
  if (!want.includes(got.status)) return `${name}: wanted ${want.join(' or ')}, got ${got.status || 'no answer'} ${got.text.slice(0, 200)}`;
  if (code && !got.text.includes(`"code":"${code}"`)) return `${name}: wanted error code ${code}: ${got.text.slice(0, 300)}`;
  if (!/\r\nx-request-id: /i.test(got.text)) return `${name}: no X-Request-Id`;
  return null;
}

/** An answer to raw bytes that is not HTTP: a 4xx error body and a closed connection, or just a close; never 5xx. */
export function judgeGarbage(got: RawOutcome): Verdict {
  if (got.status >= 500) return `garbage answered ${got.status}: ${got.text.slice(0, 200)}`;
  if (got.status === 0 && !got.closed) return 'garbage left the connection open without an answer past the wait';
  return null;
}

/** One named hostile case over raw TCP or plain HTTP. */
export interface HostileCase {
  name: string;
  run(base: string, key: string): Promise<Verdict>;
}

/** The fixed hostile cases: huge and deep bodies, numbers beyond 2^53, invalid UTF-8, header floods, slow clients (idle ones: hostile-load.ts). */
export function hostileCases(o: { bodyLimit: number; headersTimeoutMs: number }): HostileCase[] {
  return [
    {
      name: 'body over the limit (Content-Length)',
      run: async (base, key) => expectStatus('body over the limit', await rawExchange(base, [post('/v1/public/payments', Buffer.alloc(o.bodyLimit + 1, 0x20), key)]), [413], 'payload_too_large'),
    },
    {
      name: 'body over the limit (chunked, never-ending)',
      run: async (base, key) => {
        const head = Buffer.from(`POST /v1/public/payments HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n`);
        const chunk = Buffer.concat([Buffer.from('10000\r\n'), Buffer.alloc(0x10000, 0x5b), Buffer.from('\r\n')]);
        const chunks = [head, ...Array.from({ length: Math.ceil(o.bodyLimit / 0x10000) + 4 }, () => chunk)];
        return expectStatus('chunked over the limit', await rawExchange(base, chunks), [413], 'payload_too_large');
      },
    },
    {
      name: 'JSON nested as deep as the body limit allows',
      run: async (base, key) => expectStatus('deep JSON', await rawExchange(base, [post('/v1/public/payments', Buffer.from('['.repeat(Math.floor(o.bodyLimit / 2) - 1) + ']'.repeat(Math.floor(o.bodyLimit / 2) - 1)), key)]), [400], 'bad_request'),
    },
    {
      name: 'object with 50 000 keys',
      run: async (base, key) => {
        const body = '{' + Array.from({ length: 50_000 }, (_, i) => `"k${i}":${i}`).join(',') + '}';
        return expectStatus('wide JSON', await rawExchange(base, [post('/v1/public/payments', Buffer.from(body), key)]), [400, 413]);
      },
    },
    ...['9007199254740993', '1e400', '-9007199254740993', '123456789012345678901234567890', '1.5', '"100"'].map((n) => ({
      name: `amount ${n}`,
      run: async (base: string, key: string) => {
        const got = await rawExchange(base, [post('/v1/public/payments', Buffer.from(`{"amount":${n}}`), key)]);
        return expectStatus(`amount ${n}`, got, [400], 'bad_request') ?? (got.text.includes('"param":"amount"') ? null : `amount ${n}: no param amount: ${got.text.slice(-200)}`);
      },
    })),
    {
      name: 'invalid UTF-8 inside a JSON string',
      run: async (base, key) =>
        expectStatus('invalid UTF-8', await rawExchange(base, [post('/v1/public/payments', Buffer.concat([Buffer.from('{"amount":100,"description":"'), Buffer.from([0xc3, 0x28, 0xff, 0xfe]), Buffer.from('"}')]), key)]), [400], 'bad_request'),
    },
    {
      name: 'lone UTF-16 surrogate escapes',
      run: async (base, key) => {
        const got = await rawExchange(base, [post('/v1/public/payments', Buffer.from('{"amount":10000,"description":"\\ud800\\udfff\\ud800"}'), key)]);
        return got.status === 201 || got.status === 400 ? null : `lone surrogate: answered ${got.status} ${got.text.slice(0, 200)}`;
      },
    },
    {
      name: '2 000 headers (header flood)',
      run: async (base) => {
        const head = 'GET /healthz HTTP/1.1\r\nHost: x\r\n' + Array.from({ length: 2000 }, (_, i) => `X-Flood-${i}: ${'a'.repeat(10)}\r\n`).join('') + '\r\n';
        return expectStatus('header flood', await rawExchange(base, [Buffer.from(head)]), [431]);
      },
    },
    {
      name: 'one 64 KiB header',
      run: async (base) => expectStatus('huge header', await rawExchange(base, [Buffer.from(`GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'b'.repeat(65536)}\r\n\r\n`)]), [431]),
    },
    {
      name: 'slow client: headers one byte at a time',
      run: async (base) => {
        const bytes = Buffer.from('GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ' + 'z'.repeat(400) + '\r\n\r\n');
        const chunks = [...bytes].map((b) => Buffer.from([b]));
        const gap = Math.max(5, Math.ceil((o.headersTimeoutMs * 2) / chunks.length));
        const got = await rawExchange(base, chunks, { gap_ms: gap, wait_ms: o.headersTimeoutMs * 4 + 3000 });
        return got.status === 408 || (got.status === 0 && got.closed) ? null : `slow client: wanted 408 or a close, got ${got.status} ${got.text.slice(0, 120)}`;
      },
    },
  ];
}
