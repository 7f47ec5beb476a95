import type { IncomingMessage, Server } from 'node:http';
import { readFileSync } from 'node:fs';
import { isIP, type Socket } from 'node:net';
import type { ServerConfig } from './deps';

/**
 * A client address in the form allow-lists compare (the client address of a request, src/platform/auth/ip-allowlist.ts,
 * the webhooks' URL policy): zone id dropped, lower case, and an IPv4-mapped IPv6 address (`::ffff:1.2.3.4`,
 * `::ffff:102:304`, `0:0:0:0:0:ffff:…`) as plain IPv4.
 */
export function unmapIp(address: string): string {
  const plain = address.replace(/%.*$/, '').toLowerCase();
  if (isIP(plain) !== 6) return plain;
  // The URL parser writes an IPv6 address in its one canonical form, where a mapped address is `::ffff:` and two words.
  const m = /^\[::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})\]$/.exec(new URL(`http://[${plain}]/`).hostname);
  if (!m) return plain;
  const hi = parseInt(m[1], 16);
  const lo = parseInt(m[2], 16);
  return `${hi >> 8}.${hi & 0xff}.${lo >> 8}.${lo & 0xff}`;
}

/**
 * The client address. Behind a trusted proxy it is the last X-Forwarded-For entry: the one the proxy itself
 * appended; earlier entries come from the client and could be forged to pass an allow-list.
 */
export function clientIp(trustProxy: boolean, req: IncomingMessage): string {
  if (trustProxy) {
    const xff = req.headers['x-forwarded-for'];
    const entries = (Array.isArray(xff) ? xff.join(',') : xff ?? '').split(',').map((e) => e.trim()).filter(Boolean);
    const last = entries[entries.length - 1];
    if (last) return unmapIp(last);
  }
  // A keep-alive connection sends many requests from one address: normalise it once per connection.
  let ip = socketIps.get(req.socket);
  if (ip === undefined) {
    ip = unmapIp(req.socket.remoteAddress ?? '');
    socketIps.set(req.socket, ip);
  }
  return ip;
}

const socketIps = new WeakMap<Socket, string>();

/** The answer to a connection over the cap, written by hand: the HTTP parser never sees that connection. */
const OVER_CAP_RESPONSE = (() => {
  const body = JSON.stringify({ error: { code: 'unavailable', message: 'Cannot accept the connection: the server holds as many as it may; retry shortly' } });
  return `HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nRetry-After: 1\r\nConnection: close\r\n\r\n${body}`;
})();

/**
 * Connections are a resource like any other: at most --max-connections are served at once (one more is
 * answered 503 and closed, never left hanging), and a connection that sends no byte within the headers
 * timeout is closed (idle sockets would otherwise hold file descriptors and memory for ever).
 * Returns the sockets being shed, whose requests are dropped.
 */
export function guardConnections(config: Pick<ServerConfig, 'maxConnections' | 'headersTimeoutMs'>, server: Server): WeakSet<Socket> {
  const shed = new WeakSet<Socket>();
  let open = 0;
  const max = Math.min(config.maxConnections, fdCeiling());
  const firstByte_ms = config.headersTimeoutMs;
  // Before the HTTP server's own listener, so a shed socket is marked before its parser starts.
  server.prependListener('connection', (socket: Socket) => {
    open++;
    if (open > max) {
      socket.once('close', () => open--);
      shed.add(socket);
      socket.end(OVER_CAP_RESPONSE);
      socket.setTimeout(1000, () => socket.destroy());
      return;
    }
    const timer = setTimeout(() => {
      if (socket.bytesRead === 0) socket.destroy();
    }, firstByte_ms);
    timer.unref();
    socket.once('close', () => {
      open--;
      clearTimeout(timer);
    });
  });
  return shed;
}

/** Longest a connection answered before its request ended goes on reading, and dropping, what the client sends. */
const LINGER_MS = 1000;

/**
 * Close a connection whose request is refused while its body is still arriving (413, or a refusal before the
 * body) so that the client reads the answer. Node closes a connection answered with `Connection: close`
 * through `socket.destroySoon()`: the socket is destroyed as soon as the answer is written, and a socket
 * closed with bytes unread sends a reset, which a client still sending may meet before it reads the answer.
 * For this socket, destroySoon half-closes instead (the answer, then FIN) and keeps reading and dropping the
 * client's bytes (the request is resumed or dumped, so the parser discards them) until the client closes too, or at
 * most LINGER_MS. A connection kept alive never calls destroySoon and stays as it is; one that lingers is
 * put in `lingering`, and a request parsed on it meanwhile is dropped, never answered.
 */
export function lingerOnClose(socket: Socket, lingering: WeakSet<Socket>): void {
  socket.destroySoon = (): void => {
    lingering.add(socket);
    if (socket.writable) socket.end();
    if (socket.destroyed) return;
    const timer = setTimeout(() => socket.destroy(), LINGER_MS);
    timer.unref();
    socket.once('close', () => clearTimeout(timer));
    // The client's FIN: everything it sent is read, so closing now sends no reset.
    socket.once('end', () => socket.destroy());
  };
}

/**
 * Connections this process can hold without running out of file descriptors: most of the soft open-files
 * limit (the database, its WAL and outgoing webhooks need the rest). No limit known: no ceiling.
 */
function fdCeiling(): number {
  try {
    const m = /^Max open files\s+(\d+)/m.exec(readFileSync('/proc/self/limits', 'utf8'));
    return m ? Math.max(16, Math.floor(Number(m[1]) * 0.8)) : Infinity;
  } catch {
    return Infinity;
  }
}
