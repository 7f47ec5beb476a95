/** One Server-Sent Events message: optional id and event name, and one line of data. */
export interface SseMessage {
  id?: string | number;
  event?: string;
  data: string;
}

function field(name: string, value: string): string {
  // A newline would end the field early and let the rest pose as another field: refuse it.
  if (/[\r\n]/.test(value)) throw new Error(`cannot encode SSE field "${name}": value contains a newline: ${JSON.stringify(value.slice(0, 64))}`);
  return `${name}: ${value}\n`;
}

/** Encode a message as SSE text, ending with the blank line that dispatches it. Pure; throws on a newline in any field. */
export function encodeSse(m: SseMessage): string {
  let out = '';
  if (m.id !== undefined) out += field('id', String(m.id));
  if (m.event !== undefined) out += field('event', m.event);
  out += field('data', m.data);
  return out + '\n';
}

/** Encode a comment line (`: text`), which clients ignore; used for `connected` and keep-alive pings. */
export function encodeSseComment(text: string): string {
  if (/[\r\n]/.test(text)) throw new Error(`cannot encode SSE comment: text contains a newline: ${JSON.stringify(text.slice(0, 64))}`);
  return `: ${text}\n\n`;
}
