// The store, its statement cache and its WAL sync live in files of their own; this module keeps the old
// import path working.
export { Store, type StoreOptions, type Tx } from './store';
export { cachedRowReader, cachedStmt, type RowReader } from './statements';
