import { parseArgs, flag, onlyFlags, atMostPositionals, type Args } from '../platform/args';
import { COMMON_OPTIONS, output, outputList, runSubcommand, splitList, withStore, type Command } from './command';
import type { Store } from '../platform/storage/store';
import { addEndpoint, deleteEndpoint, deliveryLog, listEndpoints, resendEvent, rotateSecret } from '../money/webhooks/store';
import { iso, isoOrNull } from '../platform/util/time';
import { Clocks } from '../platform/clock';
import { createLogger } from '../platform/log';
import { Scheduler } from '../platform/queue/jobs';

const usage = `Usage:
  kopek webhook add --shop ID --url URL [--events E1,E2] [--signature v1|v2] [--webhook-allow CIDRS]
  kopek webhook list --shop ID
  kopek webhook delete ENDPOINT_ID
  kopek webhook rotate ENDPOINT_ID [--overlap HOURS]
  kopek webhook deliveries [--event EVT_ID] [--shop ID]
  kopek webhook resend EVT_ID

add         adds an endpoint to a shop for both modes and prints its secret (whs_…) once;
            --events limits it to those webhook events (default: all); --signature v1 is the legacy
            format, v2 (default) the timestamped one. Live events need an https URL to a public address.
            A URL whose host is a private, link-local or other reserved IP address is refused unless
            --webhook-allow (or KOPEK_WEBHOOK_ALLOW) holds it, as the server's option of that name must too.
list        lists the shop's endpoints, with disabled ones and why (a 410 Gone answer disables one)
delete      deletes an endpoint; its pending deliveries stop
rotate      issues a new secret and prints it once; the old one stops at once, or with --overlap HOURS
            stays valid that long, the signature header carrying one signature per valid secret
deliveries  shows the delivery log: every attempt (time, URL, answer or error, latency), newest 200
resend      sends an event again now, with a fresh retry schedule, to the payment's own URL or to every
            enabled endpoint of the shop that takes it (one added since included: after a 410, delete the
            endpoint, add it again, then resend what it missed); a running server sends it within seconds

Options:
${COMMON_OPTIONS}

Examples:
  kopek webhook add --shop 3b9e… --url https://shop.example/hooks/psp
  kopek webhook add --shop 3b9e… --url https://old.example/cb --events payment.succeeded,payment.refunded --signature v1
  kopek webhook list --shop 3b9e… --json
  kopek webhook rotate 7d1c… --overlap 24
  kopek webhook deliveries --event evt_01JD3Q9W2K8X5N7B4M6R0T2Y8V
  kopek webhook resend evt_01JD3Q9W2K8X5N7B4M6R0T2Y8V`;

export const webhook: Command = {
  name: 'webhook',
  summary: 'manage webhook endpoints, see deliveries, resend events',
  usage,
  async run(argv) {
    const args = parseArgs(argv);
    const [sub, id] = args.positional;
    // `rotate ID 24` meant as an overlap would otherwise end the old secret at once: refuse stray words.
    const takesId = sub === 'delete' || sub === 'rotate' || sub === 'resend';
    const line = usage.split('\n').find((l) => l.startsWith(`  kopek webhook ${sub} `))?.trim();
    if (line) atMostPositionals(args.positional, takesId ? 2 : 1, line);
    const inStore = (act: (store: Store) => Promise<void>) => async (): Promise<void> => withStore(args, act);
    return runSubcommand('webhook', args, {
      add: inStore((store) => add(store, args)),
      list: inStore((store) => list(store, args)),
      delete: inStore(async (store) => {
        onlyFlags(args, []);
        if (!id) throw new Error('webhook delete needs ENDPOINT_ID');
        await deleteEndpoint(store, id);
        output(args, { id, deleted: true }, [`deleted ${id}`]);
      }),
      rotate: inStore(async (store) => {
        onlyFlags(args, ['overlap']);
        if (!id) throw new Error('webhook rotate needs ENDPOINT_ID');
        const raw = flag(args, 'overlap') ?? '0';
        if (!/^\d+(\.\d+)?$/.test(raw)) throw new Error(`cannot rotate webhook secret: --overlap must be a number of hours, got "${raw}"`);
        const secret = await rotateSecret(store, id, Number(raw), Date.now());
        output(args, { id, secret, overlap_hours: Number(raw) }, [
          `secret  ${secret}   (shown once)`,
          Number(raw) > 0 ? `the previous secret stays valid for ${raw} h` : 'the previous secret is no longer valid',
        ]);
      }),
      deliveries: inStore((store) => deliveries(store, args)),
      resend: inStore(async (store) => {
        onlyFlags(args, []);
        if (!id) throw new Error('webhook resend needs EVT_ID');
        // The jobs are written here and run by the server (its next re-read of the jobs table finds them).
        const jobs = new Scheduler(store, new Clocks(), createLogger('silent'));
        const n = await store.tx(async (tx) => resendEvent(tx, jobs, id, Date.now()));
        output(args, { event_id: id, requeued: n }, [`re-queued ${n} deliver${n === 1 ? 'y' : 'ies'} of ${id}`]);
      }),
    });
  },
};

async function add(store: Store, args: Args): Promise<void> {
  onlyFlags(args, ['shop', 'url', 'events', 'signature', 'webhook-allow']);
  const shopId = flag(args, 'shop');
  const url = flag(args, 'url');
  if (!shopId || !url) throw new Error('webhook add needs --shop ID and --url URL');
  // The operator's ranges, read as the server reads its own option (flag, else environment).
  const allow = (flag(args, 'webhook-allow') ?? process.env.KOPEK_WEBHOOK_ALLOW ?? '').split(',').map((r) => r.trim()).filter(Boolean);
  const { endpoint, secret } = await addEndpoint(store, { shopId, url, events: flag(args, 'events'), signature: flag(args, 'signature'), allow }, Date.now());
  output(args, { id: endpoint.id, secret, url: endpoint.url, events: splitList(endpoint.events), signature: endpoint.signature }, [
    `endpoint id  ${endpoint.id}`,
    `secret       ${secret}   (shown once)`,
  ]);
}

async function list(store: Store, args: Args): Promise<void> {
  onlyFlags(args, ['shop']);
  const shopId = flag(args, 'shop');
  if (!shopId) throw new Error('webhook list needs --shop ID');
  await requireShop(store, shopId, 'list webhook endpoints');
  const items = (await listEndpoints(store, shopId)).map((e) => ({
    id: e.id, url: e.url, events: splitList(e.events), signature: e.signature, created_at: iso(e.created_at),
    disabled_at: isoOrNull(e.disabled_at), disabled_reason: e.disabled_reason,
  }));
  outputList(args, items, '(no endpoints)', (e) => {
    const state = e.disabled_at ? `DISABLED ${e.disabled_at}: ${e.disabled_reason}` : 'active';
    return `${e.id}  ${e.signature}  ${state}  ${e.url}  ${e.events.length ? e.events.join(',') : 'all events'}`;
  });
}

async function deliveries(store: Store, args: Args): Promise<void> {
  onlyFlags(args, ['event', 'shop']);
  const shopId = flag(args, 'shop');
  if (shopId !== undefined) await requireShop(store, shopId, 'show webhook deliveries');
  const items = await deliveryLog(store, { eventId: flag(args, 'event'), shopId, limit: 200 });
  outputList(
    args,
    items,
    '(no deliveries)',
    (i) =>
      `${i.attempted_at ?? 'due ' + i.next_attempt_at}  ${i.mode}  ${i.event_id}  ${i.event}  #${i.attempt}  ${i.status.padEnd(9)}  ` +
      `${i.response_code ?? '-'}  ${i.latency_ms === null ? '' : i.latency_ms + ' ms'}  ${i.url}${i.error ? '  ' + i.error : ''}`,
  );
}

// A mistyped shop id would otherwise look like a shop without endpoints or deliveries.
async function requireShop(store: Store, shopId: string, action: string): Promise<void> {
  if (!(await store.get('SELECT 1 FROM shops WHERE id = ?', shopId))) throw new Error(`cannot ${action}: shop "${shopId}" not found`);
}
