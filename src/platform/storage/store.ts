/**
 * The storage interface as the rest of src/ imports it: Store, Tx, Reader and what both engines share. The
 * engines themselves are SqliteStore (sqlite/store.ts) and PgStore (postgres/store.ts).
 */
export type { Engine, Reader, Row, RunResult, Tx } from './tx';
export type { EventFeed, Store, StorageTrouble } from './store-api';
export { TX_ENDED, together } from './tx';
export { endsTransaction } from './postgres/errors';
export { AWAITED_OUTSIDE, type Body } from './sqlite/body';
export { BUSY_LIMITS, type StoreOptions } from './limits';
