import { systemOpenApi } from './web/system/openapi';
import { paymentsOpenApi } from './money/payments/openapi';
import { ledgerOpenApi } from './money/ledger/openapi';
import { payoutsOpenApi } from './money/payouts/openapi';
import { banksOpenApi } from './money/sbp/openapi';
import { webhooksOpenApi } from './money/webhooks/openapi';
import { payPageOpenApi } from './web/pay-page/openapi';
import { tokensOpenApi } from './money/tokens/openapi';
import { subscriptionsOpenApi } from './money/subscriptions/openapi';
import { simulatorOpenApi } from './banks/simulator/openapi';
import { bankPortOpenApi } from './banks/callbacks';
import { cabinetOpenApi } from './web/cabinet/openapi';
import { openApiDocument } from './platform/http/openapi';

/** Every domain's OpenAPI fragment; add a domain's fragment here when its routes are added to routes.ts. */
export const FRAGMENTS = [systemOpenApi, paymentsOpenApi, ledgerOpenApi, payoutsOpenApi, banksOpenApi, webhooksOpenApi, payPageOpenApi, tokensOpenApi, subscriptionsOpenApi, simulatorOpenApi, bankPortOpenApi, cabinetOpenApi];

/** The OpenAPI document of every route of this server, for `version` served at `serverUrl`. */
export function apiDocument(version: string, serverUrl: string): Record<string, unknown> {
  return openApiDocument(FRAGMENTS, version, serverUrl);
}
