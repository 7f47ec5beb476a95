import type { Mode } from '../clock';

/** What a state change asks for: run `kind` on `subjectId` at `dueAt` (on the shop's clock in test mode). */
export interface JobSpec {
  kind: string;
  subjectId: string;
  shopId: string | null;
  mode: Mode;
  dueAt: number;
  payload?: Record<string, unknown>;
}

/** How a scheduler starts. */
export interface StartOptions {
  /**
   * This process is the only server of the database (SQLite: it holds the server lock), so every claim made
   * before it started belongs to a process that is gone: such claims count as lapsed at once instead of a
   * lease after they were last renewed.
   */
  sole?: boolean;
}
