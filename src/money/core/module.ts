import type { EventSink } from '../events/events';
import type { AsyncJobKind, JobHandler, JobKindOptions } from '../../platform/queue/jobs';
import type { BankPort } from '../bank-port/port';

/** A job kind a module runs: a handler inside the job's transaction, or an async job (work outside, outcome inside). */
export type ModuleJob =
  | { kind: string; run: JobHandler; opts?: JobKindOptions }
  /** Each async kind has a result type of its own, which the wiring does not need to know. */
  | { kind: string; async: AsyncJobKind<any>; opts?: JobKindOptions };

/** One domain as the wiring sees it. Its constructor only builds: `mountModules` registers what it lists. */
export interface Module {
  readonly name: string;
  readonly jobs?: readonly ModuleJob[];
  /** Sinks run in the transaction of every event that sends a webhook, after the sinks of the modules before it. */
  readonly sinks?: readonly EventSink[];
  readonly banks?: readonly BankPort[];
  /** Called once the server listens. */
  start?(): void;
  /** Called at shutdown, in reverse order, before the database closes. */
  stop?(): void | Promise<void>;
}
