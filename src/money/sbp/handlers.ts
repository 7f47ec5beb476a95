import type { Ctx, Reply } from '../../platform/http/types';
import { SBP_BANKS } from './directory';

const body = { items: SBP_BANKS };

/** GET /v1/public/banks/sbp: the SBP directory for bank pickers; any valid key, no scope. */
export function listSbpBanks(_ctx: Ctx): Reply {
  return { body };
}
