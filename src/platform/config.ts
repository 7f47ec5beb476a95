import { readArgs, type Grammar } from './args';
import type { LogLevel } from './log';
import { redactUrl } from './redact-url';
import { WEBHOOK_SECRET_RE } from './util/ids';

/** The value each kind of option parses to. */
type KindValue = { int: number; number: number; string: string; bool: boolean; list: string[]; level: LogLevel };

interface OptionSpec {
  key: string;
  flag: string;
  env: string;
  help: string;
  kind: keyof KindValue;
  def: unknown;
}

type Option = (typeof OPTIONS)[number];

/** The server's configuration, from flags and `KOPEK_*` variables (flags win); OPTIONS' help explains each field. */
export type Config = { [O in Option as O['key']]: KindValue[O['kind']] | (O['def'] extends null ? null : never) };

/** Every server option, for parsing and for the README's table. */
export const OPTIONS = [
  { key: 'port', flag: '--port', env: 'KOPEK_PORT', kind: 'int', def: 8080, help: 'TCP port to listen on (0 = any free port)' },
  { key: 'host', flag: '--host', env: 'KOPEK_HOST', kind: 'string', def: '127.0.0.1', help: 'address to listen on' },
  { key: 'db', flag: '--db', env: 'KOPEK_DB', kind: 'string', def: './data/kopek.db', help: 'SQLite database file, or a postgres:// URL (KOPEK_DATABASE_URL) for a cluster' },
  { key: 'baseUrl', flag: '--base-url', env: 'KOPEK_BASE_URL', kind: 'string', def: null, help: 'public address of the API (default http://HOST:PORT)' },
  { key: 'payPageUrl', flag: '--pay-page-url', env: 'KOPEK_PAY_PAGE_URL', kind: 'string', def: null, help: 'address of the hosted payment page (default the base URL)' },
  { key: 'simDelaySeconds', flag: '--sim-delay', env: 'KOPEK_SIM_DELAY', kind: 'number', def: 2, help: 'seconds the test bank takes to answer (0 = at once)' },
  { key: 'demo', flag: '--demo', env: 'KOPEK_DEMO', kind: 'bool', def: true, help: 'create a demo merchant, shop and test key on an empty database (--no-demo to skip)' },
  { key: 'ephemeral', flag: '--ephemeral', env: 'KOPEK_EPHEMERAL', kind: 'bool', def: false, help: 'keep the whole database in memory: nothing is written to disk and everything is gone when the server stops (not with --db)' },
  { key: 'demoKey', flag: '--demo-key', env: 'KOPEK_DEMO_KEY', kind: 'string', def: null, help: 'secret of the demo test key: sk_test_ and 16 to 128 of A-Z a-z 0-9 _ - (default a random one)' },
  { key: 'readyJson', flag: '--ready-json', env: 'KOPEK_READY_JSON', kind: 'bool', def: false, help: 'once listening, print one JSON line to stdout: base_url, merchant_id, shop_id, test_key, webhook_secret, webhook_endpoint_id (logs go to stderr)' },
  { key: 'webhookUrl', flag: '--webhook-url', env: 'KOPEK_WEBHOOK_URL', kind: 'string', def: null, help: 'with the demo data: a webhook endpoint of the demo shop for this URL, checked as endpoint URLs are (its secret is the ready line\'s webhook_secret)' },
  { key: 'webhookSecret', flag: '--webhook-secret', env: 'KOPEK_WEBHOOK_SECRET', kind: 'string', def: null, help: 'secret of the --webhook-url endpoint: whs_ and 16 to 200 of A-Z a-z 0-9 _ - (default a random one)' },
  { key: 'bodyLimitBytes', flag: '--body-limit', env: 'KOPEK_BODY_LIMIT', kind: 'int', def: 1_048_576, help: 'largest request body in bytes (413 above)' },
  { key: 'trustProxy', flag: '--trust-proxy', env: 'KOPEK_TRUST_PROXY', kind: 'bool', def: false, help: 'take the client address from the last X-Forwarded-For entry (only behind your own reverse proxy)' },
  { key: 'logLevel', flag: '--log-level', env: 'KOPEK_LOG_LEVEL', kind: 'level', def: 'info', help: 'debug, info, warn, error or silent' },
  { key: 'headersTimeoutMs', flag: '--headers-timeout-ms', env: 'KOPEK_HEADERS_TIMEOUT_MS', kind: 'int', def: 10_000, help: 'milliseconds a client has to send the request headers (then 408 and the connection closes)' },
  { key: 'requestTimeoutMs', flag: '--request-timeout-ms', env: 'KOPEK_REQUEST_TIMEOUT_MS', kind: 'int', def: 30_000, help: 'milliseconds a client has to send the whole request, body included (at least the headers timeout)' },
  { key: 'keepAliveTimeoutMs', flag: '--keep-alive-timeout-ms', env: 'KOPEK_KEEP_ALIVE_TIMEOUT_MS', kind: 'int', def: 5_000, help: 'milliseconds after which an idle keep-alive connection closes' },
  { key: 'ssePingSeconds', flag: '--sse-ping', env: 'KOPEK_SSE_PING', kind: 'number', def: 15, help: 'seconds between `: ping` comments on the event stream' },
  { key: 'rateLimitPerSecond', flag: '--rate-limit', env: 'KOPEK_RATE_LIMIT', kind: 'number', def: 0, help: 'requests per second per API key (0 = no limit)' },
  { key: 'rateLimitBurst', flag: '--rate-burst', env: 'KOPEK_RATE_BURST', kind: 'int', def: 100, help: 'burst size of the per-key rate limit' },
  { key: 'webhookAllow', flag: '--webhook-allow', env: 'KOPEK_WEBHOOK_ALLOW', kind: 'list', def: [], help: 'CIDR ranges that webhooks of either mode and acquirer API addresses may reach although private' },
  { key: 'webhookTimeoutMs', flag: '--webhook-timeout-ms', env: 'KOPEK_WEBHOOK_TIMEOUT_MS', kind: 'int', def: 15_000, help: 'deadline of one webhook attempt; no 2xx within it is a failure' },
  { key: 'retainJobsDays', flag: '--retain-jobs-days', env: 'KOPEK_RETAIN_JOBS_DAYS', kind: 'number', def: 7, help: 'days finished scheduler jobs are kept' },
  { key: 'retainDeliveriesDays', flag: '--retain-deliveries-days', env: 'KOPEK_RETAIN_DELIVERIES_DAYS', kind: 'number', def: 30, help: 'days webhook deliveries that ended, and their attempts, are kept' },
  { key: 'retainEventsDays', flag: '--retain-events-days', env: 'KOPEK_RETAIN_EVENTS_DAYS', kind: 'number', def: 30, help: 'days of event history the stream can replay (events a delivery still waits on stay)' },
  { key: 'retainIdempotencyHours', flag: '--retain-idempotency-hours', env: 'KOPEK_RETAIN_IDEMPOTENCY_HOURS', kind: 'number', def: 24, help: 'hours an Idempotency-Key is remembered' },
  { key: 'maxConnections', flag: '--max-connections', env: 'KOPEK_MAX_CONNECTIONS', kind: 'int', def: 4096, help: 'connections served at once; one more is answered 503 and closed (keep it below the open-files limit)' },
  { key: 'acquirerSyncAfterSeconds', flag: '--acquirer-sync-after', env: 'KOPEK_ACQUIRER_SYNC_AFTER', kind: 'number', def: 60, help: 'seconds an operation may wait for its bank before kopek asks for its status (then at growing intervals)' },
  { key: 'acquirerTimeoutSeconds', flag: '--acquirer-timeout', env: 'KOPEK_ACQUIRER_TIMEOUT', kind: 'number', def: 15, help: 'seconds one request to a live acquirer may take; no answer within it is an unknown outcome, settled by a status check' },
  { key: 'jobLeaseSeconds', flag: '--job-lease', env: 'KOPEK_JOB_LEASE', kind: 'number', def: 30, help: 'seconds a job claimed by a process stays its own without renewal; a job whose process died runs elsewhere once its claim lapses' },
  { key: 'dbPool', flag: '--db-pool', env: 'KOPEK_DB_POOL', kind: 'int', def: 10, help: 'PostgreSQL only: connections this node keeps to the database (plus one for LISTEN); keep nodes × (this + 2) below max_connections' },
] as const satisfies readonly OptionSpec[];

const LEVELS: readonly string[] = ['debug', 'info', 'warn', 'error', 'silent'];

function parseValue(spec: OptionSpec, raw: string, source: string): unknown {
  switch (spec.kind) {
    case 'int':
      if (!/^\d+$/.test(raw)) throw new Error(`${source} must be a whole number, got "${raw}"`);
      return Number(raw);
    case 'number': {
      const n = Number(raw);
      if (raw.trim() === '' || !Number.isFinite(n) || n < 0) throw new Error(`${source} must be a non-negative number, got "${raw}"`);
      return n;
    }
    case 'bool':
      if (/^(1|true|yes|on)$/i.test(raw)) return true;
      if (/^(0|false|no|off)$/i.test(raw)) return false;
      throw new Error(`${source} must be true or false, got "${raw}"`);
    case 'list':
      return raw.split(',').map((s) => s.trim()).filter(Boolean);
    case 'level':
      if (!LEVELS.includes(raw)) throw new Error(`${source} must be one of ${LEVELS.join(', ')}, got "${raw}"`);
      return raw;
    default:
      return raw;
  }
}

const BY_NAME: Record<string, OptionSpec> = Object.fromEntries(OPTIONS.map((o) => [o.flag.slice(2), o]));

/** serve's flags; a boolean's switch has a `--no-` twin and takes its variable's spellings (`--demo=false`). */
const SERVE_FLAGS: Grammar = {
  kind(name) {
    if (Object.hasOwn(BY_NAME, name)) return BY_NAME[name].kind === 'bool' ? 'switch=' : 'value';
    const negated = name.slice(3);
    return name.startsWith('no-') && Object.hasOwn(BY_NAME, negated) && BY_NAME[negated].kind === 'bool' ? 'switch' : undefined;
  },
  positionals: false,
  unknown: (word) => `unknown option "${word}"`,
};

/** The admin commands' database: --db, else KOPEK_DATABASE_URL, else KOPEK_DB, else serve's default. */
export function databaseLocation(dbFlag: string | undefined, env: NodeJS.ProcessEnv = process.env): string {
  return dbFlag ?? env.KOPEK_DATABASE_URL ?? env.KOPEK_DB ?? String(BY_NAME.db.def);
}

export function defaultConfig(): Config {
  const c: Record<string, unknown> = {};
  for (const o of OPTIONS) c[o.key] = Array.isArray(o.def) ? [...o.def] : o.def;
  return c as unknown as Config;
}

/** Build the config from argv (after the command) and the environment; throws a one-line error on bad input. */
export function loadConfig(argv: string[], env: NodeJS.ProcessEnv = process.env): Config {
  const c = defaultConfig() as unknown as Record<string, unknown>;
  for (const o of OPTIONS) {
    const v = env[o.env];
    if (v !== undefined && v !== '') c[o.key] = parseValue(o, v, o.env);
  }
  // KOPEK_DATABASE_URL (serve and every command) wins over KOPEK_DB, a flag over both.
  if (env.KOPEK_DATABASE_URL) c.db = env.KOPEK_DATABASE_URL;
  const flagged = new Set<string>();
  for (const [name, value] of readArgs(argv, SERVE_FLAGS).given) {
    const negated = !Object.hasOwn(BY_NAME, name);
    const o = BY_NAME[negated ? name.slice(3) : name];
    flagged.add(o.key);
    c[o.key] = value === true ? !negated : parseValue(o, value, o.flag);
  }
  const cfg = c as unknown as Config;
  if (cfg.port > 65535) throw new Error(`--port must be at most 65535, got ${cfg.port}`);
  if (cfg.bodyLimitBytes < 1) throw new Error(`--body-limit must be at least 1 byte, got ${cfg.bodyLimitBytes}`);
  if (cfg.rateLimitBurst < 1) throw new Error(`--rate-burst must be at least 1, got ${cfg.rateLimitBurst}`);
  if (cfg.dbPool < 1 || cfg.dbPool > 1000) throw new Error(`--db-pool must be 1 to 1000, got ${cfg.dbPool}`);
  if (!(cfg.jobLeaseSeconds > 0)) throw new Error(`--job-lease must be more than 0 seconds, got ${cfg.jobLeaseSeconds}`);
  if (cfg.headersTimeoutMs < 1 || cfg.requestTimeoutMs < 1) {
    throw new Error(`--headers-timeout-ms and --request-timeout-ms must be at least 1, got ${cfg.headersTimeoutMs} and ${cfg.requestTimeoutMs}`);
  }
  // node:http refuses a headers timeout longer than the whole-request timeout.
  if (cfg.headersTimeoutMs > cfg.requestTimeoutMs) {
    throw new Error(`--headers-timeout-ms must not exceed --request-timeout-ms, got ${cfg.headersTimeoutMs} > ${cfg.requestTimeoutMs}`);
  }
  for (const key of ['baseUrl', 'payPageUrl'] as const) {
    const u = cfg[key];
    if (u === null) continue;
    try {
      const parsed = new URL(u);
      if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new Error('scheme');
    } catch {
      throw new Error(`${key === 'baseUrl' ? '--base-url' : '--pay-page-url'} must be an http(s) URL, got "${u}"`);
    }
    cfg[key] = u.replace(/\/+$/, '');
  }
  checkDemoOptions(cfg, flagged.has('db'));
  return cfg;
}

/** A test key's secret as authenticate.ts accepts it; kopek's own are `sk_test_` and 43 base64url characters. */
const TEST_KEY_RE = /^sk_test_[A-Za-z0-9_-]{16,128}$/;

/** An in-memory database is `db` ':memory:' (a --db beside it is a contradiction); a demo key must be accepted by the API. */
function checkDemoOptions(cfg: Config, dbFlag: boolean): void {
  if (cfg.ephemeral) {
    if (dbFlag && cfg.db !== ':memory:') throw new Error(`--ephemeral keeps the database in memory; it cannot be used with --db "${redactUrl(cfg.db)}"`);
    cfg.db = ':memory:';
  }
  // The endpoint needs the demo, its secret needs the endpoint; serve applies the API's URL checks before writing.
  if (cfg.webhookUrl !== null && !cfg.demo) throw new Error('--webhook-url adds an endpoint to the demo shop; it cannot be used with --no-demo');
  if (cfg.webhookSecret !== null) {
    if (cfg.webhookUrl === null) throw new Error('--webhook-secret is the secret of the --webhook-url endpoint; it cannot be used without --webhook-url');
    if (!WEBHOOK_SECRET_RE.test(cfg.webhookSecret)) {
      // The beginning only: a secret that is almost right should not land whole in a CI log.
      throw new Error(`--webhook-secret must be whs_ and 16 to 200 of A-Z a-z 0-9 _ -, got "${cfg.webhookSecret.slice(0, 8)}…"`);
    }
  }
  if (cfg.demoKey === null) return;
  if (!cfg.demo) throw new Error('--demo-key names the key of the demo data; it cannot be used with --no-demo');
  if (!TEST_KEY_RE.test(cfg.demoKey)) {
    // A live key given by mistake is not echoed to the terminal or a CI log.
    const shown = cfg.demoKey.startsWith('sk_live_') ? 'a live key' : `"${cfg.demoKey.length > 24 ? cfg.demoKey.slice(0, 24) + '…' : cfg.demoKey}"`;
    throw new Error(`--demo-key must be a test key, sk_test_ and 16 to 128 of A-Z a-z 0-9 _ -, got ${shown}`);
  }
}

/** The options as a Markdown table (flag, environment variable, default, meaning), for docs/api-basics.md. */
export function optionsMarkdown(): string {
  const def = (o: OptionSpec): string => {
    if (o.def === null) return '-';
    if (Array.isArray(o.def)) return o.def.length ? `\`${o.def.join(',')}\`` : '(empty)';
    return `\`${String(o.def)}\``;
  };
  const rows = OPTIONS.map((o) => {
    const flag = o.kind === 'bool' ? `\`${o.flag}\` / \`--no-${o.flag.slice(2)}\`` : `\`${o.flag} VALUE\``;
    return `| ${flag} | \`${o.env}\` | ${def(o)} | ${o.help} |`;
  });
  return ['| flag | environment | default | meaning |', '|---|---|---|---|', ...rows].join('\n');
}
