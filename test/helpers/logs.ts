/** Wait (polling, up to `timeout_ms`) for a log line whose parsed JSON satisfies `pred`; the access line is written when the response closes, just after the client has it. */
export async function waitForLog(logs: string[], pred: (entry: Record<string, any>) => boolean, timeout_ms = 3000): Promise<Record<string, any>> {
  const deadline = Date.now() + timeout_ms;
  for (;;) {
    for (const line of logs) {
      const entry = JSON.parse(line) as Record<string, any>;
      if (pred(entry)) return entry;
    }
    if (Date.now() > deadline) throw new Error(`no log line matched within ${timeout_ms} ms; last lines:\n${logs.slice(-5).join('')}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}
