import type { Config } from '../config';
import type { Logger } from '../log';
import type { ApiError } from './errors';
import type { Auth, CabinetAuth, Ctx, Reply } from './types';

/**
 * What the HTTP server is built from (by src/app.ts). It knows no domain: authentication, the cabinet's session and
 * error pages, rate limits and key-use notes are its `guards`; `services` is what every handler finds in `ctx.app`.
 */
export interface ServerDeps<S> {
  readonly config: ServerConfig;
  readonly log: Logger;
  /** `closing` is true once shutdown began: every new request is refused with 503. */
  readonly shutdown: { readonly closing: boolean };
  readonly services: S;
  readonly guards: ServerGuards<S>;
  /** Per-route observer (metrics); called once per finished request. */
  readonly observe?: (route: string, method: string, status: number, duration_ms: number) => void;
}

/** The configuration values the server reads: timeouts, connection cap, proxy trust, body limit. */
export type ServerConfig = Pick<
  Config,
  'headersTimeoutMs' | 'requestTimeoutMs' | 'keepAliveTimeoutMs' | 'maxConnections' | 'trustProxy' | 'bodyLimitBytes'
>;

/** What the key check reads from a request before a byte of its body is read. */
export interface KeyInput {
  authorization: string | undefined;
  /** The client address after proxy rules (for the shop's allow-list). */
  ip: string;
  /** The connection: a keep-alive client's key hash is kept with it. */
  connection: object;
}

/** A key that passed the checks made from the headers alone; the body's signature is checked once the body is read. */
export interface KeyCheck {
  auth: Auth;
  /** Verify the request signature over the raw body (401); absent when the shop requires none. */
  verifyBody?: (signature: string | undefined, rawBody: Buffer) => void;
}

/** The guards, called in the order of createHttpServer's comment; each refuses by throwing an ApiError. */
export interface ServerGuards<S> {
  /** The API key of the Authorization header: Bearer key (401), live mode, IP allow-list (403); before the body. */
  key(input: KeyInput): Promise<KeyCheck>;
  /** The key a stream token stands for (401 when malformed, forged, expired or its key revoked). */
  streamToken(token: string): Promise<Auth>;
  /** A cabinet route's session cookie, and a POST's CSRF token (401/403), once the body is read. */
  cabinet(ctx: Ctx<S>): Promise<CabinetAuth>;
  /** How a refused request under /cabinet is answered: a page, or the way to the sign-in page. */
  cabinetError(ctx: Ctx<S>, err: ApiError): Reply;
  /** 403 unless the caller's key holds the route's scope. */
  scope(auth: Auth, scope: string): void;
  /** Take one request from the key's budget (429 over it); absent when requests are not limited. */
  rateLimit?(keyId: string): void;
  /** Note that a key was just used (the cabinet shows its last use). */
  noteKeyUse(keyId: string): void;
}
