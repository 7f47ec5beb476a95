/** One sample of a Prometheus text exposition. */
export interface PromSample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** Parse `name{a="b",…} value` lines (comments skipped). */
export function parseMetrics(text: string): PromSample[] {
  const out: PromSample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = /^(\w+)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) throw new Error(`cannot parse metrics line "${line}"`);
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]] = l[2];
    out.push({ name: m[1], labels, value: Number(m[3]) });
  }
  return out;
}

/** The value of the sample with exactly these labels, or undefined. */
export function sample(all: PromSample[], name: string, labels: Record<string, string>): number | undefined {
  const want = Object.entries(labels);
  const hit = all.find((x) => x.name === name && Object.keys(x.labels).length === want.length && want.every(([k, v]) => x.labels[k] === v));
  return hit?.value;
}
