import { systemOpenApi } from '../system/openapi';

/** Every domain's OpenAPI fragment; add a domain's fragment here when its routes are added to routes.ts. */
export const FRAGMENTS = [systemOpenApi];
