import type { Config } from './platform/config';
import type { App } from './app-types';
import type { ServerGuards } from './platform/http/deps';
import { authenticateKey, requireScope } from './platform/auth/authenticate';
import { authenticateStreamToken } from './platform/auth/stream-token';
import { RateLimiter } from './platform/auth/rate-limit';
import { authenticateCabinet, cabinetErrorReply } from './web/cabinet/sessions';

/** The steps of the request chain that belong to auth/ and cabinet/, handed to the HTTP server, which knows neither. */
export function serverGuards(app: App, config: Pick<Config, 'rateLimitPerSecond' | 'rateLimitBurst'>): ServerGuards<App> {
  const limiter = config.rateLimitPerSecond > 0 ? new RateLimiter(config.rateLimitPerSecond, config.rateLimitBurst) : null;
  // Bound once here, so that a request calls each step itself, not a closure around it.
  return {
    key: authenticateKey.bind(null, app.store),
    streamToken: (token) => authenticateStreamToken(app.store, token, app.clocks.real()),
    cabinet: authenticateCabinet,
    cabinetError: cabinetErrorReply,
    scope: requireScope,
    rateLimit: limiter ? limiter.take.bind(limiter) : undefined,
    noteKeyUse: app.keyUsage.note,
  };
}
