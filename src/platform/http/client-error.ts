import { randomUUID } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Logger } from '../log';
import { ApiError } from './errors';
import { logAccess } from './access-log';

const REASONS: Record<number, string> = { 400: 'Bad Request', 408: 'Request Timeout', 431: 'Request Header Fields Too Large' };

function classify(code: string | undefined): ApiError {
  if (code === 'HPE_HEADER_OVERFLOW') {
    return new ApiError(431, 'bad_request', 'Cannot read the request: headers too large');
  }
  if (code === 'ERR_HTTP_REQUEST_TIMEOUT') {
    return new ApiError(408, 'request_timeout', 'Cannot read the request: the client was too slow to send it');
  }
  return new ApiError(400, 'bad_request', 'Cannot parse the HTTP request');
}

/**
 * Answer a connection-level failure (malformed HTTP, headers too large, a client too slow to send its
 * headers or body) with the error body, an X-Request-Id and an access-log line, then close the connection.
 * `inflight` is the response of a request whose body was still arriving, if any.
 */
export function onClientError(log: Logger, err: NodeJS.ErrnoException, socket: Duplex, inflight: ServerResponse | undefined): void {
  if (err.code === 'ECONNRESET' || err.code === 'EPIPE') {
    socket.destroy();
    return;
  }
  const apiErr = classify(err.code);
  if (inflight && !inflight.headersSent && inflight.writable) {
    // The request is known (its body was too slow): answer through its response so its own access line says 408.
    const body = JSON.stringify(apiErr.toBody());
    inflight.writeHead(apiErr.status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body), Connection: 'close' });
    inflight.end(body);
    return;
  }
  if (!socket.writable || inflight) {
    socket.destroy();
    return;
  }
  const requestId = randomUUID();
  const body = JSON.stringify(apiErr.toBody());
  socket.end(
    `HTTP/1.1 ${apiErr.status} ${REASONS[apiErr.status]}\r\n` +
      `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
      `X-Request-Id: ${requestId}\r\nConnection: close\r\n\r\n${body}`,
  );
  logAccess(log, { requestId, method: '-', path: '-', status: apiErr.status, durationMs: 0, extra: { error: err.code ?? 'client_error' } });
}
