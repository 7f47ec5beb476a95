import type { IncomingMessage, ServerResponse } from 'node:http';

/** What authentication established about the caller. */
export interface Auth {
  keyId: string;
  merchantId: string;
  shopId: string;
  shopName: string;
  mode: 'test' | 'live';
  /** The key's effective scopes: its own, intersected with its shop's. */
  scopes: ReadonlySet<string>;
}

/** A signed-in cabinet user, from the session cookie (src/web/cabinet/sessions.ts). */
export interface CabinetAuth {
  userId: string;
  email: string;
  merchantId: string;
  /** SHA-256 of the session cookie: the session's key. */
  sessionHash: string;
  /** The session's CSRF token, put into every form. */
  csrf: string;
  /** Which data the pages show: test or live. */
  mode: 'test' | 'live';
  lang: 'ru' | 'en';
  /** True when the user signs in with a TOTP code too. */
  totp: boolean;
  /** A message left for this page by the POST before it, shown once. */
  flash: { kind: 'ok' | 'error'; text: string } | null;
}

/**
 * Everything a handler may read about the request. `app` holds the services: a handler names in `S` only what it
 * uses (the core, or a domain's type that extends it); the root passes an object that has all of them.
 */
export interface Ctx<S = unknown> {
  app: S;
  req: IncomingMessage;
  res: ServerResponse;
  requestId: string;
  method: string;
  path: string;
  /** The route pattern matched, e.g. `/v1/public/payments/:id`. */
  route: string;
  params: Record<string, string>;
  query: URLSearchParams;
  /** The exact bytes received, kept for signatures and idempotency. */
  rawBody: Buffer;
  /** The parsed body: JSON value, form map, or undefined when empty. */
  body: unknown;
  /** The client address after proxy rules, IPv4-mapped addresses unwrapped. */
  ip: string;
  /** Present on routes with auth 'key' or 'test'. */
  auth?: Auth;
  /** Present on routes with auth 'cabinet': the signed-in cabinet user and their session. */
  cabinet?: CabinetAuth;
  /** Set by the handler for the access log: anything safe to log about the outcome. */
  logExtra?: Record<string, unknown>;
}

/** A handler's answer. JSON is the default; `raw` means the handler wrote the response itself (SSE). */
export type Reply =
  /** A body to serialise; `json`, when given, is that body already serialised (sent as it is). */
  | { status?: number; body: unknown; json?: string; headers?: Record<string, string> }
  /** A JSON body already serialised (a cached answer). */
  | { status?: number; json: string; body?: never; headers?: Record<string, string> }
  | { status?: number; html: string; headers?: Record<string, string> }
  | { status?: number; text: string; contentType?: string; headers?: Record<string, string> }
  | { status: 302 | 303; location: string; headers?: Record<string, string> }
  | { raw: true };

/** Or throws an ApiError. */
export type Handler<S = unknown> = (ctx: Ctx<S>) => Reply | Promise<Reply>;

/** One line of the route table. */
export interface RouteDef<S = unknown> {
  /** No auth, any API key, a test key (live keys get 404), or a cabinet session (a POST also needs its CSRF token). */
  auth: 'none' | 'key' | 'test' | 'cabinet';
  /** Scope the key must have; a scope that depends on the body (payouts by method) is checked in the handler with requireScope. */
  scope?: string;
  /** JSON only (API) or also forms (hosted page). */
  body?: 'json' | 'form';
  /** The route also accepts a stream token in `?token=` instead of the key (src/platform/auth/stream-token.ts). */
  streamToken?: boolean;
  handler: Handler<S>;
}
