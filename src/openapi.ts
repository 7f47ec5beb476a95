import { systemOpenApi } from './system/openapi';
import { paymentsOpenApi } from './payments/openapi';
import { ledgerOpenApi } from './ledger/openapi';
import { payoutsOpenApi } from './payouts/openapi';
import { banksOpenApi } from './banks/openapi';
import { webhooksOpenApi } from './webhooks/openapi';
import { payPageOpenApi } from './pay-page/openapi';
import { tokensOpenApi } from './tokens/openapi';
import { subscriptionsOpenApi } from './subscriptions/openapi';
import { simulatorOpenApi } from './simulator/openapi';
import { bankPortOpenApi } from './bank-port/openapi';
import { cabinetOpenApi } from './cabinet/openapi';

import { openApiDocument } from './http/openapi';

/** Every domain's OpenAPI fragment; add a domain's fragment here when its routes are added to routes.ts. */
export const FRAGMENTS = [systemOpenApi, paymentsOpenApi, ledgerOpenApi, payoutsOpenApi, banksOpenApi, webhooksOpenApi, payPageOpenApi, tokensOpenApi, subscriptionsOpenApi, simulatorOpenApi, bankPortOpenApi, cabinetOpenApi];

/** The OpenAPI document of every route of this server, for `version` served at `serverUrl`. */
export function apiDocument(version: string, serverUrl: string): Record<string, unknown> {
  return openApiDocument(FRAGMENTS, version, serverUrl);
}
