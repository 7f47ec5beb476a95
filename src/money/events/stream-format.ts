import { badRequest } from '../../platform/http/errors';
import type { Reader } from '../../platform/storage/store';
import { iso } from '../../platform/util/time';
import { sseData, type EventRow } from './emit';
import { encodeSse } from './sse';
import { webhookBody } from './webhook-body';

/**
 * What the stream sends per event: `events` (default) every event as `{kind, payload, at}`; `webhook` only the
 * events that send a webhook, each as the exact body a delivery POSTs, named by its webhook event. A test tool
 * that forwards webhooks (`kopek listen`) reads the second, so it needs no endpoint and sends the same bytes.
 */
export type StreamFormat = 'events' | 'webhook';

/** The `format` query parameter of GET /v1/public/events; anything else is refused before the stream opens. */
export function parseStreamFormat(raw: string | null): StreamFormat {
  if (raw === null || raw === 'events') return 'events';
  if (raw === 'webhook') return 'webhook';
  throw badRequest(`Cannot open the event stream: format must be "events" or "webhook", got "${raw.slice(0, 64)}"`, 'format');
}

/** The event kind a key's scopes are checked against: the webhook event in the webhook format (null: not sent). */
export function streamKind(row: EventRow, format: StreamFormat): string | null {
  return format === 'webhook' ? row.webhook_event : row.kind;
}

/** The SSE text of one event in a format; `id:` is the event's sequence number in both, for Last-Event-ID. */
export function encodeStreamEvent(row: EventRow, format: StreamFormat): string {
  if (format === 'events') return encodeSse({ id: row.seq, event: row.kind, data: JSON.stringify(sseData(row)) });
  const event = row.webhook_event!;
  return encodeSse({ id: row.seq, event, data: webhookBody(row.id, event, iso(row.at), row.webhook_data ?? 'null') });
}

/** Which database a stream reads: its random id and when it was made (schema.sql, `database_identity`). */
export interface DatabaseIdentity {
  id: string;
  created_at: number;
}

/** Read the database's identity (one row, made with the schema). */
export async function databaseIdentity(q: Reader): Promise<DatabaseIdentity> {
  const row = await q.get<DatabaseIdentity>('SELECT id, created_at FROM database_identity LIMIT 1');
  if (!row) throw new Error('cannot open the event stream: the database has no identity row (database_identity)');
  return row;
}

/**
 * The stream's answer headers that let a client resume across a restart: the database's id and birth time, and
 * the sequence number the stream starts after. A client that reconnects and finds another id knows the ids it
 * holds mean nothing here (a restarted in-memory server counts from 1 again).
 */
export function resumeHeaders(identity: DatabaseIdentity, after: number): Record<string, string> {
  return {
    'X-Kopek-Database-Id': identity.id,
    'X-Kopek-Database-Created': iso(identity.created_at),
    'X-Kopek-Stream-After': String(after),
  };
}
