import type { OpenApiFragment } from '../../platform/http/openapi-types';
import { html } from '../pay-page/openapi';

const location = { Location: { schema: { type: 'string' } } };
const toSignIn = { description: 'No session (or it expired): to /cabinet/login?next=…', headers: location };
const session = [{ cabinetSession: [] }];
/** Every refusal of a cabinet route is an HTML page (the request chain's too: body too large, wrong type). */
const refusals = { default: html('A page saying what was refused: 400, 404 (not this merchant\'s, or none), 405, 413, 415, 429, 500') };

const pathParams = (names: string[]) => names.map((name) => ({ name, in: 'path', required: true, schema: { type: 'string' } }));
const queryParams = (names: string[]) => names.map((name) => ({ name, in: 'query', required: false, schema: { type: 'string' } }));

/** A signed-in GET page; `query` names its query parameters. */
function page(summary: string, query: string[] = [], path: string[] = []): Record<string, unknown> {
  return { get: { summary, tags: ['Cabinet'], security: session, parameters: [...pathParams(path), ...queryParams(query)], responses: { '200': html('The page'), '303': toSignIn, ...refusals } } };
}

/** A register's CSV export, streamed; `query` names its query parameters when the document lists them. */
function csv(summary: string, query?: string[]): Record<string, unknown> {
  const responses = { '200': { description: 'text/csv', content: { 'text/csv': { schema: { type: 'string' } } } }, '303': toSignIn, ...refusals };
  return { get: { summary, tags: ['Cabinet'], security: session, ...(query ? { parameters: queryParams(query) } : {}), responses } };
}

/** A signed-in form POST; every one needs the session's CSRF token in `_csrf` (or the X-CSRF-Token header). */
function post(summary: string, fields: string[], o: { path?: string[]; shows?: string } = {}): Record<string, unknown> {
  const properties: Record<string, unknown> = { _csrf: { type: 'string', description: "The session's CSRF token" } };
  for (const f of fields) properties[f] = { type: 'string' };
  const responses: Record<string, unknown> = {
    '303': { description: 'Done or refused with a reason: back to the page, which shows the message once', headers: location },
    '403': html('No valid CSRF token, or sent from another origin (Origin, Sec-Fetch-Site): nothing changed'),
    ...refusals,
  };
  if (o.shows) responses['200'] = html(o.shows);
  const requestBody = { required: true, content: { 'application/x-www-form-urlencoded': { schema: { type: 'object', required: ['_csrf'], properties } } } };
  return { post: { summary, tags: ['Cabinet'], security: session, parameters: pathParams(o.path ?? []), requestBody, responses } };
}

const loginFields = { _csrf: { type: 'string' }, email: { type: 'string' }, password: { type: 'string' }, code: { type: 'string' }, next: { type: 'string' } };
const filters = ['shop', 'status', 'from', 'to', 'amount_min', 'amount_max', 'cursor'];

/** OpenAPI paths of the merchant cabinet: HTML pages for people, signed in with a session cookie (docs/cabinet.md). */
export const cabinetOpenApi: OpenApiFragment = {
  paths: {
    '/cabinet': { get: { summary: 'To the overview (or the sign-in page)', tags: ['Cabinet'], security: [], responses: { '303': { description: 'To /cabinet/overview', headers: location } } } },
    '/cabinet/login': {
      get: {
        summary: 'The sign-in form; sets the form\'s CSRF cookie',
        tags: ['Cabinet'],
        security: [],
        parameters: [{ name: 'lang', in: 'query', required: false, schema: { enum: ['ru', 'en'] } }, { name: 'next', in: 'query', required: false, schema: { type: 'string' } }],
        responses: { '200': html('The form'), '303': { description: 'Already signed in: to the overview', headers: location } },
      },
      post: {
        summary: 'Sign in with email, password and (when on) a TOTP or recovery code',
        tags: ['Cabinet'],
        security: [],
        requestBody: { required: true, content: { 'application/x-www-form-urlencoded': { schema: { type: 'object', required: ['_csrf', 'email', 'password'], properties: loginFields } } } },
        responses: {
          '303': {
            description: 'Signed in: the session cookie is set (HttpOnly; SameSite=Strict; Path=/cabinet; over https named __Host-kopek_cabinet, Secure, Path=/)',
            headers: { ...location, 'Set-Cookie': { schema: { type: 'string' } } },
          },
          '401': html('Wrong email, password or code'),
          '403': html("The form's CSRF token is missing or wrong, or the form was sent from another origin"),
          '429': { ...html('Slowed or locked after failed sign-ins (each attempt is reserved before the password is checked)'), headers: { 'Retry-After': { schema: { type: 'integer' } } } },
          ...refusals,
        },
      },
    },
    '/cabinet/logout': post('Sign out (this session)', []),
    '/cabinet/logout-all': post('Sign out everywhere (every session of the user)', []),
    '/cabinet/prefs': post('Switch test/live data or the language', ['mode', 'lang', 'back']),
    '/cabinet/overview': page('Balances per shop, payments per day, latest payments, failing webhook endpoints'),
    '/cabinet/payments': page('The payment register with filters and cursor pages', [...filters, 'order_id']),
    '/cabinet/payments.csv': csv('CSV of every row of the payment register filter, streamed', [...filters, 'order_id']),
    '/cabinet/payments/{id}': page("A payment: fields, refunds, timeline of events (events_from: where the next window of the shop's log starts), webhook attempts, actions", ['events_from'], ['id']),
    '/cabinet/payments/{id}/refund': post('Refund a payment (amount in rubles; empty: the remainder)', ['amount', 'reason'], { path: ['id'] }),
    '/cabinet/payments/{id}/cancel': post('Cancel a pending payment', [], { path: ['id'] }),
    '/cabinet/events/{id}/resend': post('Send a webhook event again now', ['back'], { path: ['id'] }),
    '/cabinet/refunds': page('The refund register', filters),
    '/cabinet/refunds.csv': csv('CSV of the refund register filter, streamed'),
    '/cabinet/payouts': page('The payout register', filters),
    '/cabinet/payouts.csv': csv('CSV of the payout register filter, streamed'),
    '/cabinet/shops': { ...page("The merchant's shops"), ...post('Create a shop', ['name'], { shows: 'The new shop with its secrets, shown once' }) },
    '/cabinet/shops/{id}': page("A shop's scopes, IP allow-list, request signing, acquirer, payout provider and live mode", [], ['id']),
    '/cabinet/shops/{id}/scopes': post("Replace the shop's scopes (repeat `scope`)", ['scope'], { path: ['id'] }),
    '/cabinet/shops/{id}/ip-allowlist': post("Replace the shop's IP allow-list", ['ip_allowlist'], { path: ['id'] }),
    '/cabinet/shops/{id}/require-signature': post('Require X-PSP-Signature (on=1) or not', ['on'], { path: ['id'] }),
    '/cabinet/shops/{id}/signing-secret': post('Rotate the request-signing secret', [], { path: ['id'], shows: 'The new secret, shown once' }),
    '/cabinet/shops/{id}/acquirer': post("Set the shop's T-Bank terminal (the password is stored encrypted, never shown again)", ['terminal_key', 'password', 'api_url'], { path: ['id'] }),
    '/cabinet/shops/{id}/acquirer/remove': post("Remove the shop's acquirer", [], { path: ['id'] }),
    '/cabinet/shops/{id}/payout-provider': post("Set the shop's payout provider, YooKassa Payouts (the credentials are checked at the provider; the secret key is stored encrypted, never shown again)", ['provider', 'agent_id', 'secret', 'api_url'], { path: ['id'] }),
    '/cabinet/shops/{id}/payout-provider/remove': post("Remove the shop's payout provider", [], { path: ['id'] }),
    '/cabinet/activate-live': post("Activate the merchant's live mode (a shop needs an acquirer or a payout provider)", ['back']),
    '/cabinet/keys': { ...page("A shop's API keys", ['shop']), ...post('Create an API key (repeat `scope`)', ['shop', 'mode', 'scope'], { shows: 'The whole key, shown once' }) },
    '/cabinet/keys/{id}/revoke': post('Revoke an API key', [], { path: ['id'] }),
    '/cabinet/webhooks': {
      ...page("A shop's webhook endpoints and delivery log", ['shop', 'event', 'status']),
      ...post('Add a webhook endpoint (repeat `event`)', ['shop', 'url', 'event', 'signature'], { shows: "The endpoint's secret, shown once" }),
    },
    '/cabinet/webhooks/{id}/rotate': post("Rotate an endpoint's secret, the old one valid `overlap` hours more", ['overlap'], { path: ['id'], shows: 'The new secret, shown once' }),
    '/cabinet/webhooks/{id}/delete': post('Delete a webhook endpoint', [], { path: ['id'] }),
    '/cabinet/test': page("A shop's test clock and test data", ['shop']),
    '/cabinet/test/{shop}/advance': post("Advance the shop's test clock (unit: minutes, hours, days)", ['amount', 'unit'], { path: ['shop'] }),
    '/cabinet/test/{shop}/reset': post("Delete the shop's test data (confirm=1)", ['confirm'], { path: ['shop'] }),
    '/cabinet/audit': page("The merchant's audit log: sign-ins and changes", ['before']),
    '/cabinet/account': page('Two-step sign-in, password, sign out everywhere'),
    '/cabinet/account/totp': post('Begin TOTP enrolment', []),
    '/cabinet/account/totp/confirm': post('Confirm TOTP with a code', ['code'], { shows: 'The recovery codes, shown once' }),
    '/cabinet/account/totp/disable': post('Turn TOTP off (asks for the password and a current or recovery code; throttled as sign-in)', ['password', 'code']),
    '/cabinet/account/password': post('Change the password (throttled as sign-in; the other sessions end)', ['current', 'next']),
  },
};
