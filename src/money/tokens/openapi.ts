import {
  type OpenApiFragment, bearer, createdResponses, idempotencyHeader, jsonBody, ref, registerPage, registerQuery, strictObject, uuidSchema as uuid, timeSchema as time,
  timeOrNullSchema as timeOrNull, amountSchema as amount,
  cancelOp, idParam, readOp,
} from '../../platform/http/openapi-types';
import { PAYMENT_STATUSES } from '../bank-port/payment';
import { TOKEN_METHODS, TOKEN_STATUSES } from './store';

/** The register query of tokens and subscriptions: the common parameters and customer_ref. */
export const recurrentListQuery = [
  ...registerQuery,
  { name: 'customer_ref', in: 'query', schema: { type: 'string' }, description: "only this customer's objects" },
];

/** The properties of a Token object (the simulator's outcome queue view adds one). */
export const tokenProps = {
  id: uuid, customer_ref: { type: 'string' },
  customer_email: { type: 'string', description: '"" when none was given' },
  method: { enum: [...TOKEN_METHODS] }, status: { enum: [...TOKEN_STATUSES] },
  card_brand: { type: 'string', description: 'cards, once bound: mir, visa, mastercard, …; "" otherwise' },
  card_mask: { type: 'string', pattern: '^([0-9]{4})?$', description: 'cards, once bound: the last 4 digits ("1234", as a payout\'s recipient_card_mask); "" otherwise' },
  last_charged_at: { ...timeOrNull, description: 'the last successful charge; null before one' },
  subscription_id: { type: ['string', 'null'], format: 'uuid', description: 'the subscription that made this token, if any' },
  binding_payment_id: { ...uuid, description: 'the payment whose hosted page binds the token' },
  created_at: time, activated_at: timeOrNull, cancelled_at: timeOrNull,
};

/** OpenAPI paths and schemas of saved-method tokens. */
export const tokensOpenApi: OpenApiFragment = {
  paths: {
    '/v1/public/tokens': {
      post: {
        operationId: 'createToken',
        summary: 'Save a payment method (scope api:recurrent:bind; Idempotency-Key accepted): a pending token and the hosted page that binds it',
        security: bearer, parameters: [idempotencyHeader],
        requestBody: jsonBody(strictObject({
          customer_ref: { type: 'string', maxLength: 128, pattern: '\\S', description: 'not white space alone' },
          method: { enum: [...TOKEN_METHODS], default: 'cards' },
          amount: { ...amount, description: 'required for sbp and tpay (the first charge binds); not used for cards (1 RUB verification), though still checked when sent' },
          customer_email: { type: 'string', maxLength: 254 },
          return_url: { type: 'string', format: 'uri' },
        }, ['customer_ref'])),
        responses: createdResponses(ref('TokenCreated'), 'Created pending'),
      },
      get: readOp('listTokens', 'Tokens of the shop (scope api:recurrent:bind), newest first', recurrentListQuery,
        'A page', registerPage('Token')),
    },
    '/v1/public/tokens/{id}': {
      get: readOp('getToken', 'A token (scope api:recurrent:bind)', idParam, 'The token', ref('Token')),
    },
    '/v1/public/tokens/{id}/cancel': {
      post: cancelOp('cancelToken',
        'Cancel a pending or active token (scope api:recurrent:bind); a subscription using it is cancelled too', idParam),
    },
    '/v1/public/tokens/{id}/charge': {
      post: {
        operationId: 'chargeToken',
        summary: 'Charge an active token (scope api:recurrent:charge; Idempotency-Key accepted): a payment of method recurrent',
        security: bearer,
        parameters: [...idParam, idempotencyHeader],
        requestBody: jsonBody(
          strictObject({ amount, order_id: { type: 'string', maxLength: 128 }, description: { type: 'string', maxLength: 1000 } }, ['amount']),
        ),
        responses: createdResponses(ref('TokenCharge'), 'The charge payment, its bank session open', 'Idempotent replay, with the current status'),
      },
    },
  },
  schemas: {
    Token: strictObject(tokenProps),
    TokenCreated: strictObject({
      card: strictObject({ id: uuid, customer_ref: { type: 'string' }, status: { enum: [...TOKEN_STATUSES] } }),
      pay_url: { type: 'string', format: 'uri', description: 'the hosted page of the binding payment' },
      binding_payment_id: uuid, idempotent: { const: true },
    }, ['card', 'pay_url', 'binding_payment_id']),
    TokenCharge: strictObject(
      { id: { ...uuid, description: 'the payment id' }, status: { enum: [...PAYMENT_STATUSES] }, amount, idempotent: { const: true } },
      ['id', 'status', 'amount'],
    ),
  },
};
