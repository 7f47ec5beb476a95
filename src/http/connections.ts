import type { IncomingMessage, Server } from 'node:http';
import type { Socket } from 'node:net';
import { readFileSync } from 'node:fs';
import type { App } from '../app-types';
import { unmapIp } from '../auth/ip-allowlist';

/**
 * The client address. Behind a trusted proxy it is the last X-Forwarded-For entry: the one the proxy itself
 * appended; earlier entries come from the client and could be forged to pass an allow-list.
 */
export function clientIp(app: App, req: IncomingMessage): string {
  if (app.config.trustProxy) {
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
export function guardConnections(app: App, server: Server): WeakSet<Socket> {
  const shed = new WeakSet<Socket>();
  let open = 0;
  const max = Math.min(app.config.maxConnections, fdCeiling());
  const firstByte_ms = app.config.headersTimeoutMs;
  // Before the HTTP server's own listener, so a shed socket is marked before its parser starts.
  server.prependListener('connection', (socket: Socket) => {
    open++;
    socket.once('close', () => open--);
    if (open > max) {
      shed.add(socket);
      socket.end(OVER_CAP_RESPONSE);
      socket.setTimeout(1000, () => socket.destroy());
      return;
    }
    const timer = setTimeout(() => {
      if (socket.bytesRead === 0) socket.destroy();
    }, firstByte_ms);
    timer.unref();
    socket.once('close', () => clearTimeout(timer));
  });
  return shed;
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
