import { gunzipSync } from 'node:zlib';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request as httpRequest } from 'node:http';
import { defaultConfig, type Config } from '../../src/platform/config';
import { startApp, type Running, type StartOptions } from '../../src/app';
import { createLogger } from '../../src/platform/log';
import type { Store } from '../../src/platform/storage/store';
import { createDemo, createKey, createMerchant, createShop } from '../../src/money/shops/store';
import { openEngine } from '../../src/platform/storage/maintenance';
import { dropPgDatabase, ensureMasterKey, freshPgDatabase, TEST_PG } from './pg';
import type { Mode } from '../../src/platform/clock';
import { checkResponse } from './openapi-check';
import { putShopAcquirer } from '../../src/money/bank-port/store';
import { MasterKey } from '../../src/platform/secrets/at-rest';
import { tbankAcquirer } from '../../src/banks/tbank/settings';
import { HELPER_TERMINAL, sharedFakeTBank } from './tbank';

/** A response as tests see it. */
export interface TestResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  /** Parsed JSON body, or undefined when the body is not JSON. */
  body: any;
}

/** Options of one request. */
export interface RequestOptions {
  /** API key; default the demo test key. `null` sends no Authorization header. */
  key?: string | null;
  /** A JSON value (serialized) or a Buffer/string sent as is. */
  body?: unknown;
  headers?: Record<string, string>;
  /** Skip the OpenAPI response check (for raw protocol tests). */
  noSchemaCheck?: boolean;
  /**
   * Ms until a request without its whole answer fails (default REQUEST_TIMEOUT_MS): a request that was meant to be
   * refused but opened an event stream fails its test instead of hanging it.
   */
  timeoutMs?: number;
}

/** How long doRequest waits for a whole answer by default. */
export const REQUEST_TIMEOUT_MS = 60_000;

/** A shop with a key, made directly in the database. */
export interface TestShop {
  merchantId: string;
  shopId: string;
  key: string;
  keyId: string;
}

/** A real server on port 0 over a temp SQLite file (or a fresh PostgreSQL database with KOPEK_TEST_PG), with helpers for requests and cabinet setup. */
export interface TestServer {
  url: string;
  dir: string;
  dbPath: string;
  running: Running;
  /** Every log line the server wrote. */
  logs: string[];
  demo: TestShop;
  request(method: string, path: string, opts?: RequestOptions): Promise<TestResponse>;
  /**
   * A new merchant and shop with a key; scopes default to all. A shop with a live key gets a T-Bank acquirer
   * at the process's shared fake bank (as an operator sets one before live keys work), unless `acquirer: false`.
   */
  newShop(opts?: { mode?: Mode; shopScopes?: string; keyScopes?: string; acquirer?: boolean }): Promise<TestShop>;
  /** Another key of an existing shop (a live one gives the shop the helper's acquirer if it has none). */
  newKey(shopId: string, mode: Mode, scopes?: string): Promise<{ key: string; keyId: string }>;
  /**
   * The running server's store (reads in assertions with `get`/`all`, cabinet changes; writes through
   * `write`/`tx` only: the connection belongs to the engine).
   */
  store: Store;
  /** Stop the server and start it again on the same database (and port 0). */
  restart(config?: Partial<Config>): Promise<void>;
  close(): Promise<void>;
}

/** Start a server for a test file. Close it in `after`. */
export async function startTestServer(
  config: Partial<Config> = {},
  opts: Pick<StartOptions, 'realNow' | 'modules'> & { dir?: string; sqlite?: boolean } = {},
): Promise<TestServer> {
  const dir = opts.dir ?? mkdtempSync(join(tmpdir(), 'kopek-test-'));
  let dbPath = join(dir, 'kopek.db');
  // `sqlite`: a SQLite file whatever engine the run tests (the source of a copy to PostgreSQL).
  const pg = TEST_PG !== null && !opts.sqlite;
  if (pg) {
    ensureMasterKey();
    dbPath = await freshPgDatabase();
  }
  const setup = await openEngine(dbPath);
  const d = await createDemo(setup, Date.now());
  await setup.close();
  const logs: string[] = [];
  const log = createLogger('debug', (line) => {
    logs.push(line);
  });
  // The fake banks listen on 127.0.0.1: the harness is an operator who opened that address (--webhook-allow);
  // a test of the refusal passes `webhookAllow: []`.
  const cfg = (): Config => ({ ...defaultConfig(), port: 0, host: '127.0.0.1', db: dbPath, demo: false, simDelaySeconds: 0, webhookAllow: ['127.0.0.1/32'], ...config });
  const helperBank = await sharedFakeTBank();
  let running = await startApp(cfg(), { log, realNow: opts.realNow, modules: opts.modules });
  const t: TestServer = {
    get url() {
      return running.url;
    },
    dir,
    dbPath,
    get running() {
      return running;
    },
    logs,
    demo: { merchantId: d.merchant.id, shopId: d.shop.id, key: d.secret, keyId: d.key.id },
    get store() {
      return running.app.store;
    },
    request: (method, path, o = {}) => doRequest(running.url, method, path, o, d.secret),
    async newShop(o = {}) {
      const store = running.app.store;
      const m = await createMerchant(store, 'Test merchant', Date.now());
      const s = await createShop(store, m.id, 'Test shop', o.shopScopes, Date.now());
      const k = await createKey(store, s.id, o.mode ?? 'test', o.keyScopes, Date.now());
      if (o.mode === 'live' && o.acquirer !== false) {
        const row = tbankAcquirer(new MasterKey(dbPath), s.id, { ...HELPER_TERMINAL, apiUrl: helperBank.apiUrl }, Date.now());
        await store.tx(async (tx) => putShopAcquirer(tx, row));
      }
      return { merchantId: m.id, shopId: s.id, key: k.secret, keyId: k.key.id };
    },
    async newKey(shopId, mode, scopes) {
      const store = running.app.store;
      if (mode === 'live' && !(await store.get('SELECT 1 FROM shop_acquirers WHERE shop_id = ?', shopId))) {
        const row = tbankAcquirer(new MasterKey(dbPath), shopId, { ...HELPER_TERMINAL, apiUrl: helperBank.apiUrl }, Date.now());
        await store.tx(async (tx) => putShopAcquirer(tx, row));
      }
      const k = await createKey(store, shopId, mode, scopes, Date.now());
      return { key: k.secret, keyId: k.key.id };
    },
    async restart(more = {}) {
      await running.close();
      running = await startApp({ ...cfg(), ...more }, { log, realNow: opts.realNow, modules: opts.modules });
    },
    async close() {
      await running.close();
      if (pg) await dropPgDatabase(dbPath);
      // A folder the caller gave (a tmpfs mount, say) is the caller's to remove.
      if (opts.dir === undefined) rmSync(dir, { recursive: true, force: true });
    },
  } as TestServer;
  return t;
}

/** One HTTP request with node:http (so tests control every header and byte); JSON answers are checked against OpenAPI. */
export function doRequest(base: string, method: string, path: string, o: RequestOptions, defaultKey: string): Promise<TestResponse> {
  const headers: Record<string, string> = {};
  const key = o.key === undefined ? defaultKey : o.key;
  if (key !== null) headers.authorization = `Bearer ${key}`;
  let payload: Buffer | undefined;
  if (o.body !== undefined) {
    if (Buffer.isBuffer(o.body)) payload = o.body;
    else if (typeof o.body === 'string') payload = Buffer.from(o.body);
    else payload = Buffer.from(JSON.stringify(o.body));
    headers['content-type'] = 'application/json';
  }
  Object.assign(headers, o.headers);
  if (payload) headers['content-length'] = String(payload.length);
  const url = new URL(path, base);
  const ms = o.timeoutMs ?? REQUEST_TIMEOUT_MS;
  let timer: NodeJS.Timeout | undefined;
  return new Promise<TestResponse>((resolve, reject) => {
    timer = setTimeout(() => req.destroy(new Error(`${method} ${path}: no whole answer within ${ms} ms`)), ms);
    const req = httpRequest(url, { method, headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const raw = Buffer.concat(chunks);
        const text = (res.headers['content-encoding'] === 'gzip' ? gunzipSync(raw) : raw).toString('utf8');
        let body: unknown;
        if ((res.headers['content-type'] ?? '').startsWith('application/json') && text.length > 0) {
          try {
            body = JSON.parse(text);
          } catch (err) {
            reject(new Error(`response to ${method} ${path} is not JSON: ${text.slice(0, 200)}`));
            return;
          }
          if (!o.noSchemaCheck) {
            try {
              checkResponse(method, url.pathname, res.statusCode ?? 0, body);
            } catch (err) {
              reject(err);
              return;
            }
          }
        }
        resolve({ status: res.statusCode ?? 0, headers: res.headers, text, body });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(payload);
  }).finally(() => clearTimeout(timer));
}
