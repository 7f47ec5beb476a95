import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultConfig, type Config } from '../../src/platform/config';
import { createLogger } from '../../src/platform/log';
import { startApp, type Running } from '../../src/app';
import { createDemo } from '../../src/money/shops/store';
import { openEngine } from '../../src/platform/storage/maintenance';
import type { Store } from '../../src/platform/storage/store';
import { doRequest, type RequestOptions, type TestResponse, type TestShop } from './server';
import { dropPgDatabase, ensureMasterKey, freshPgDatabase } from './pg';

/** One kopek node of a test cluster: a whole server (its own pool, scheduler, stream hub) on the shared database. */
export interface ClusterNode {
  name: string;
  running: Running;
  url: string;
  logs: string[];
  request(method: string, path: string, opts?: RequestOptions): Promise<TestResponse>;
  close(): Promise<void>;
}

/** Nodes over one fresh PostgreSQL database, with a demo shop made before they start. */
export interface TestCluster {
  dbUrl: string;
  dir: string;
  demo: TestShop;
  nodes: ClusterNode[];
  /** A store of the test's own on the database, for assertions. */
  store: Store;
  /** Start one more node (the same options as the others unless given). */
  addNode(config?: Partial<Config>): Promise<ClusterNode>;
  close(): Promise<void>;
}

/**
 * Start `n` nodes in this process over one new database (KOPEK_TEST_PG). Each is a separate server with its own
 * connection pool, scheduler, event feed and caches, exactly as separate processes would be; only the process's
 * memory is shared, and no kopek state lives in module variables. Tests of a killed process spawn real ones.
 */
export async function startCluster(n: number, config: Partial<Config> = {}): Promise<TestCluster> {
  ensureMasterKey();
  const dbUrl = await freshPgDatabase();
  const dir = mkdtempSync(join(tmpdir(), 'kopek-cluster-'));
  const store = await openEngine(dbUrl);
  const d = await createDemo(store, store.now());
  const demo: TestShop = { merchantId: d.merchant.id, shopId: d.shop.id, key: d.secret, keyId: d.key.id };
  const nodes: ClusterNode[] = [];
  const addNode = async (more: Partial<Config> = {}): Promise<ClusterNode> => {
    const name = String.fromCharCode(65 + nodes.length);
    const logs: string[] = [];
    const cfg: Config = { ...defaultConfig(), port: 0, host: '127.0.0.1', db: dbUrl, demo: false, simDelaySeconds: 0, webhookAllow: ['127.0.0.1/32'], ...config, ...more };
    const running = await startApp(cfg, { log: createLogger('debug', (l) => void logs.push(l)) });
    let closed = false;
    const node: ClusterNode = {
      name,
      running,
      url: running.url,
      logs,
      request: (method, path, o = {}) => doRequest(running.url, method, path, o, demo.key),
      async close() {
        if (closed) return;
        closed = true;
        await running.close();
      },
    };
    nodes.push(node);
    return node;
  };
  for (let i = 0; i < n; i++) await addNode();
  return {
    dbUrl,
    dir,
    demo,
    nodes,
    store,
    addNode,
    async close() {
      for (const node of nodes) await node.close();
      await store.close();
      await dropPgDatabase(dbUrl);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Poll `cond` every 10 ms until it holds; throw after `limit_ms`. */
export async function until(what: string, cond: () => Promise<boolean> | boolean, limit_ms = 10_000): Promise<void> {
  const deadline = Date.now() + limit_ms;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${limit_ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** `kopek ARGS` as a process of its own, with `env` over this process's: exit code and output. */
export function kopekProcess(args: string[], env: NodeJS.ProcessEnv = {}, timeout_ms = 30_000): Promise<{ code: number; stdout: string; stderr: string }> {
  const main = join(__dirname, '..', '..', 'src', 'main.ts');
  return new Promise((resolve) => {
    execFile(process.execPath, ['--import', 'tsx', main, ...args], { env: { ...process.env, ...env }, timeout: timeout_ms }, (err, stdout, stderr) => {
      resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
  });
}
