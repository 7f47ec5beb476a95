import { Router } from './router';
import type { RouteDef } from './types';
import * as system from '../system/handlers';

/** The route table: one line per route. Patterns are checked when added; a duplicate stops start-up. */
export function buildRouter(): Router<RouteDef> {
  const r = new Router<RouteDef>();
  // System
  r.add('GET', '/healthz', { auth: 'none', handler: system.health });
  r.add('GET', '/v1/openapi.json', { auth: 'none', handler: system.openapi });
  // Test helpers (sk_test_ keys only; a live key gets 404)
  r.add('GET', '/v1/test/clock', { auth: 'test', handler: system.getClock });
  r.add('POST', '/v1/test/clock/advance', { auth: 'test', handler: system.advanceClock });
  r.add('POST', '/v1/test/reset', { auth: 'test', handler: system.reset });
  return r;
}
