/**
 * The exact body of a webhook: the stored object snapshot is inserted as stored, so retries send the same bytes.
 * It lives with the event log because two readers make it: a delivery (src/money/webhooks/attempt.ts) and the event
 * stream's webhook format, whose clients (`kopek listen`) must forward the same bytes a delivery sends.
 */
export function webhookBody(eventId: string, event: string, createdAt: string, dataJson: string): string {
  return `{"id":${JSON.stringify(eventId)},"event":${JSON.stringify(event)},"created_at":${JSON.stringify(createdAt)},"data":${dataJson}}`;
}
