/** Every scope a shop or key can hold. Payment operations need none. */
export const ALL_SCOPES = [
  'api:payouts:sbp',
  'api:payouts:card',
  'api:payouts:account',
  'api:balance:read',
  'api:reports:read',
  'api:recurrent:bind',
  'api:recurrent:charge',
] as const;

export type Scope = (typeof ALL_SCOPES)[number];

/** Parse a comma list of scopes; throws naming the first unknown one. */
export function parseScopes(text: string): Scope[] {
  const out: Scope[] = [];
  for (const part of text.split(',').map((s) => s.trim()).filter(Boolean)) {
    if (!(ALL_SCOPES as readonly string[]).includes(part)) {
      throw new Error(`unknown scope "${part}"; known: ${ALL_SCOPES.join(', ')}`);
    }
    if (!out.includes(part as Scope)) out.push(part as Scope);
  }
  return out;
}
