import type { Store } from '../../platform/storage/store';
import type { Clocks } from '../../platform/clock';
import type { Ctx, Reply } from '../../platform/http/types';
import type { EventStreamHub } from '../../money/events/events';
import type { WebhookAttempts } from '../../money/webhooks/delivery';
import { countJobs } from '../../platform/queue/jobs-table';
import { pendingDeliveryCount } from '../../platform/storage/dialect';

/** Upper bounds (seconds) of the request latency histogram's buckets; +Inf is implied. */
const LATENCY_BUCKETS_S = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

// Labels come from the route table and a fixed method list, never from the raw path: the series count stays bounded.
const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

// What a scrape reads besides the counters kept here. Passed to `render` rather than held: the webhook attempts
// are built after the metrics (they report to them).
export interface MetricsSources {
  readonly store: Store;
  readonly stream: Pick<EventStreamHub, 'clientCount'>;
  readonly webhooks: Pick<WebhookAttempts, 'inFlight'>;
}

/** Per-route request counters and latency histograms, fed by the server's request observer. */
export class Metrics {
  private readonly requests = new Map<string, number>();
  private readonly histograms = new Map<string, { buckets: number[]; sum: number; count: number }>();
  /** Each route pattern's label value, escaped once (patterns come from the route table: a bounded set). */
  private readonly routeLabels = new Map<string, string>();
  /** Webhook attempts by result, and deliveries that ended by state, since start (counters, kept in memory). */
  private readonly attempts = new Map<string, number>([['succeeded', 0], ['error_status', 0], ['no_response', 0]]);
  private readonly ended = new Map<string, number>([['succeeded', 0], ['failed', 0]]);

  constructor(private readonly startedAt: number) {}

  /** Count one finished request (the server calls it on every response, aborted ones included). */
  readonly observe = (route: string, method: string, status: number, duration_ms: number): void => {
    const m = METHODS.has(method) ? method : 'OTHER';
    const code = status > 0 ? String(status) : 'aborted';
    let label = this.routeLabels.get(route);
    if (label === undefined) this.routeLabels.set(route, (label = escapeLabel(route)));
    const reqKey = `route="${label}",method="${m}",status="${code}"`;
    this.requests.set(reqKey, (this.requests.get(reqKey) ?? 0) + 1);
    const histKey = `route="${label}",method="${m}"`;
    let h = this.histograms.get(histKey);
    if (!h) this.histograms.set(histKey, (h = { buckets: new Array<number>(LATENCY_BUCKETS_S.length).fill(0), sum: 0, count: 0 }));
    const seconds = duration_ms / 1000;
    for (let i = 0; i < LATENCY_BUCKETS_S.length; i++) if (seconds <= LATENCY_BUCKETS_S[i]) h.buckets[i]++;
    h.sum += seconds;
    h.count++;
  };

  /** Count one recorded webhook attempt, and the delivery's end when the attempt ended it (bound: the attempt job may hold it alone). */
  readonly webhookAttempt = (responseCode: number | null, succeeded: boolean, deliveryState: string): void => {
    const result = succeeded ? 'succeeded' : responseCode === null ? 'no_response' : 'error_status';
    this.attempts.set(result, (this.attempts.get(result) ?? 0) + 1);
    if (deliveryState !== 'pending') this.ended.set(deliveryState, (this.ended.get(deliveryState) ?? 0) + 1);
  };

  /** The Prometheus text exposition (format 0.0.4) of everything known now. */
  async render(sources: MetricsSources, nowMs: number): Promise<string> {
    const out: string[] = [];
    describe(out, 'kopek_http_requests_total', 'counter', 'HTTP requests answered, by route pattern, method and status.');
    for (const [k, v] of [...this.requests].sort()) out.push(`kopek_http_requests_total{${k}} ${v}`);
    describe(out, 'kopek_http_request_duration_seconds', 'histogram', 'Time from request start to the end of the response.');
    for (const [k, h] of [...this.histograms].sort()) {
      LATENCY_BUCKETS_S.forEach((le, i) => out.push(`kopek_http_request_duration_seconds_bucket{${k},le="${le}"} ${h.buckets[i]}`));
      out.push(`kopek_http_request_duration_seconds_bucket{${k},le="+Inf"} ${h.count}`);
      out.push(`kopek_http_request_duration_seconds_sum{${k}} ${round(h.sum)}`);
      out.push(`kopek_http_request_duration_seconds_count{${k}} ${h.count}`);
    }
    describe(out, 'kopek_jobs', 'gauge', 'Scheduled jobs by kind and state: pending (never failed), retrying (failed, will run again), dead (gave up).');
    for (const c of await countJobs(sources.store)) {
      const kind = escapeLabel(c.kind);
      for (const state of ['pending', 'retrying', 'dead'] as const) out.push(`kopek_jobs{kind="${kind}",state="${state}"} ${c[state] ?? 0}`);
    }
    // Kept as attempts are recorded: a scrape reads no table (the log is pruned, and counting it cost a full scan per scrape).
    describe(out, 'kopek_webhook_attempts_total', 'counter', 'Webhook delivery attempts since start, by result: succeeded (2xx), error_status (other answer), no_response.');
    for (const [result, n] of [...this.attempts].sort()) out.push(`kopek_webhook_attempts_total{result="${result}"} ${n}`);
    describe(out, 'kopek_webhook_deliveries_ended_total', 'counter', 'Webhook deliveries that ended since start, by state.');
    for (const [state, n] of [...this.ended].sort()) out.push(`kopek_webhook_deliveries_ended_total{state="${state}"} ${n}`);
    // Pending deliveries are read through their partial index: only those rows, however long the log.
    const pending = await pendingDeliveryCount(sources.store);
    gauge(out, 'kopek_webhook_deliveries', 'Webhook deliveries (one per event and receiver) waiting for an answer.', pending, '{state="pending"}');
    gauge(out, 'kopek_webhook_attempts_in_flight', 'Webhook attempts under way now.', sources.webhooks.inFlight);
    gauge(out, 'kopek_sse_clients', 'Event stream (SSE) clients connected now.', sources.stream.clientCount);
    gauge(out, 'kopek_process_resident_memory_bytes', 'Resident set size of the process.', process.memoryUsage().rss);
    gauge(out, 'kopek_process_uptime_seconds', 'Seconds since the server started.', round((nowMs - this.startedAt) / 1000));
    return out.join('\n') + '\n';
  }
}

function describe(out: string[], name: string, type: 'counter' | 'gauge' | 'histogram', help: string): void {
  out.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`);
}

function gauge(out: string[], name: string, help: string, value: number, labels = ''): void {
  describe(out, name, 'gauge', help);
  out.push(`${name}${labels} ${value}`);
}

function escapeLabel(v: string): string {
  return v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}

function round(n: number): number {
  return Math.round(n * 1e6) / 1e6;
}

export type MetricsApp = MetricsSources & { readonly metrics: Metrics; readonly clocks: Clocks };

/** GET /metrics: Prometheus text format, no key (bind to a private address or filter it at the proxy). */
export async function metricsHandler(ctx: Ctx<MetricsApp>): Promise<Reply> {
  return { text: await ctx.app.metrics.render(ctx.app, ctx.app.clocks.real()), contentType: 'text/plain; version=0.0.4; charset=utf-8' };
}
