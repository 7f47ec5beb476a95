import { type OpenApiFragment, jsonResponse, ref, errorResponses } from '../../platform/http/openapi-types';

const idParam = [{ name: 'id', in: 'path', required: true, schema: { type: 'string' }, description: 'Payment id' }];
const langParam = { name: 'lang', in: 'query', required: false, schema: { enum: ['ru', 'en'] }, description: 'Page language; default from Accept-Language, else Russian. Kept across the flow.' };

/** An HTML response (the hosted page's and the cabinet's pages). */
export function html(description: string): Record<string, unknown> {
  return { description, content: { 'text/html': { schema: { type: 'string' } } } };
}

/** Every route of the page: a buyer's, with no key. */
const hosted = { tags: ['Hosted page'], security: [] };
const seeOther = { description: "Back to the payment's page (or, after a final status, to return_url)", headers: { Location: { schema: { type: 'string' } } } };
const notFound = html('Friendly page: no payment has this id');

/** An optional query parameter of the page, one of `values`. */
function queryParam(name: string, values: string[], description: string): Record<string, unknown> {
  return { name, in: 'query', required: false, schema: { enum: values }, description };
}

function formPost(summary: string, fields: Record<string, unknown>, required: string[], extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    post: {
      summary,
      ...hosted,
      parameters: [...idParam, langParam],
      requestBody: { required: false, content: { 'application/x-www-form-urlencoded': { schema: { type: 'object', required, properties: fields, additionalProperties: false } } } },
      // The request chain answers a body it cannot read (malformed, too large, wrong type) with the JSON error body.
      responses: { '303': seeOther, '404': notFound, ...errorResponses, ...extra },
    },
  };
}

/** OpenAPI paths of the hosted payment page: HTML screens for buyers, their form posts, and the status poll. */
export const payPageOpenApi: OpenApiFragment = {
  paths: {
    '/pay/{id}': {
      get: {
        summary: 'The hosted payment page: the screen of the payment\'s current state',
        description:
          "Method choice (method any), SBP QR code, card form, 3-D Secure challenge, bank confirmation, processing, the confirmation of the buyer's cancel, and final status screens. " +
          "Opening the page changes nothing: the buyer's POST of a method (or, for a test payment, of the card form, which is the first screen of a card payment) opens the bank session (pending → processing). " +
          'A final status other than succeeded redirects to return_url at once; succeeded redirects after about 2 s.',
        ...hosted,
        parameters: [
          ...idParam,
          langParam,
          queryParam('method', ['any', 'sbp', 'cards', 'tpay', 'bankpay'], "A pending payment whose method was not fixed: the pay step of this method (a test payment's cards: the card form), or `any` for the method list"),
          queryParam('cancel', ['ask'], 'A pending payment: the confirmation step of the buyer\'s cancel ("Yes, cancel" posts to /pay/{id}/cancel with confirm=yes; "Back" returns to the screen of `method`)'),
          queryParam('back', ['success', 'fail'], "Live mode: the acquirer sent the buyer back (its SuccessURL / FailURL); the page waits for the bank's answer instead of sending the buyer to the bank again"),
        ],
        responses: {
          '200': html('The screen (live mode: the way to the bank\'s page, the SBP QR code of the bank, or waiting for its answer)'),
          '303': { description: 'Final status: to return_url with payment_id and status', headers: { Location: { schema: { type: 'string' } } } },
          '404': notFound,
        },
      },
    },
    '/pay/{id}/status': {
      get: { summary: 'Status the waiting page polls', ...hosted, parameters: idParam, responses: { '200': jsonResponse('Current status', ref('PayPageStatus')), ...errorResponses } },
    },
    '/pay/{id}/bank': {
      get: {
        summary: "The simulated bank's confirmation page (SBP bank app, T-Pay, bank wallet)",
        ...hosted,
        parameters: [...idParam, langParam],
        responses: { '200': html('Bank confirmation'), '303': seeOther, '404': notFound },
      },
      ...formPost('Approve or decline at the simulated bank (test mode)', { action: { enum: ['approve', 'decline'] } }, ['action']),
    },
    '/pay/{id}/method': formPost('Choose the method of an `any` payment (stays pending)', { method: { enum: ['sbp', 'cards', 'tpay', 'bankpay'] } }, ['method']),
    '/pay/{id}/cancel': formPost("The buyer cancels a pending payment, with the confirmation step's confirm=yes; without it the 303 leads to that step (?cancel=ask) and nothing changes", { confirm: { enum: ['yes'] } }, []),
    '/pay/{id}/card': formPost(
      'Pay by card (test mode): checked like the page script does (Luhn, expiry, CVC); the number is never stored. On a pending payment a card that passes opens the card session first',
      {
        number: { type: 'string', description: '15 to 19 digits, spaces allowed' },
        exp: { type: 'string', description: 'MM/YY, not in the past' },
        cvc: { type: 'string', description: '3 digits, 4 for Amex' },
        holder: { type: 'string', description: 'Latin letters, optional' },
      },
      ['number', 'exp', 'cvc'],
      { '400': { description: 'The card form again, with the failed checks (HTML); a body that cannot be read gets the JSON error', content: { 'text/html': { schema: { type: 'string' } }, 'application/json': { schema: ref('Error') } } } },
    ),
    '/pay/{id}/3ds': formPost('Answer the 3-D Secure challenge (test code 123456)', { code: { type: 'string' } }, ['code']),
  },
  schemas: {
    PayPageStatus: {
      type: 'object',
      required: ['status', 'step', 'final', 'test'],
      additionalProperties: false,
      properties: {
        status: { enum: ['pending', 'processing', 'succeeded', 'failed', 'cancelled', 'refunded', 'expired'] },
        step: {
          enum: ['', 'challenge', 'confirm', 'waiting', 'bank_redirect', 'bank_qr', 'bank_waiting'],
          description: "The buyer's step on the page, '' when none; live: bank_redirect (the bank's page is ready), bank_qr (the SBP QR code is ready), bank_waiting (the bank has not answered yet)",
        },
        final: { type: 'boolean' },
        test: { type: 'boolean' },
      },
    },
  },
};
