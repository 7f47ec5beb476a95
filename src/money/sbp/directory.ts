import banks from './sbp-banks.json';

/** A participant of the Faster Payments System (SBP) as the directory lists it. */
export interface SbpBank {
  member_id: string;
  name: string;
  name_en: string;
}

/** The directory, sorted by `name` in Russian collation; bundled with the executable. */
export const SBP_BANKS: readonly SbpBank[] = Object.freeze(banks as SbpBank[]);

const byId = new Map(SBP_BANKS.map((b) => [b.member_id, b]));

export function sbpBank(memberId: string): SbpBank | undefined {
  return byId.get(memberId);
}
