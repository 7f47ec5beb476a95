import { connect, type Socket } from 'node:net';

/** A response parsed from raw bytes. */
export interface RawResponse {
  status: number;
  headers: Record<string, string>;
  text: string;
  /** Parsed JSON body when the response says application/json. */
  body: any;
}

/** A TCP connection to the server that the test writes bytes to by hand (slow clients, malformed requests). */
export interface RawConnection {
  socket: Socket;
  write(data: string | Buffer): void;
  /** The first complete response on the connection. */
  response(): Promise<RawResponse>;
  /** Resolves when the server closes the connection, with the ms since connecting. */
  closed: Promise<number>;
}

function parse(buf: Buffer): RawResponse | null {
  const end = buf.indexOf('\r\n\r\n');
  if (end < 0) return null;
  const [statusLine, ...lines] = buf.subarray(0, end).toString('latin1').split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const i = line.indexOf(':');
    headers[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim();
  }
  const length = Number(headers['content-length'] ?? 0);
  if (buf.length < end + 4 + length) return null;
  const text = buf.subarray(end + 4, end + 4 + length).toString('utf8');
  const body = (headers['content-type'] ?? '').startsWith('application/json') && text ? JSON.parse(text) : undefined;
  return { status: Number(statusLine.split(' ')[1]), headers, text, body };
}

/** Open a raw connection to `url`'s host and port (IPv6 literals included). */
export function rawConnect(url: string): Promise<RawConnection> {
  const u = new URL(url);
  const host = u.hostname.replace(/^\[|\]$/g, '');
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const socket = connect({ host, port: Number(u.port) }, () => {
      let data = Buffer.alloc(0);
      const waiters: Array<() => void> = [];
      socket.on('data', (chunk: Buffer) => {
        data = Buffer.concat([data, chunk]);
        for (const w of waiters.splice(0)) w();
      });
      const closed = new Promise<number>((res) => socket.on('close', () => {
        for (const w of waiters.splice(0)) w();
        res(Date.now() - started);
      }));
      socket.on('error', () => {});
      resolve({
        socket,
        write: (d) => void socket.write(d),
        closed,
        response: () =>
          new Promise<RawResponse>((res, rej) => {
            const check = (): void => {
              const parsed = parse(data);
              if (parsed) return res(parsed);
              if (socket.destroyed || socket.readableEnded) return rej(new Error(`connection closed without a full response: ${data.toString('latin1').slice(0, 200)}`));
              waiters.push(check);
            };
            check();
          }),
      });
    });
    socket.once('error', reject);
  });
}
