/** A route's compiled pattern: `/v1/public/payments/:id/refund` → a RegExp with named groups. */
interface Compiled<T> {
  method: string;
  pattern: string;
  regex: RegExp;
  keys: string[];
  value: T;
  staticPath: string | null;
}

/** The outcome of matching a request: the route and its params, a 405 with the allowed methods, or nothing. */
export type Match<T> =
  | { kind: 'found'; value: T; params: Record<string, string>; pattern: string }
  | { kind: 'method_not_allowed'; allow: string[] }
  | { kind: 'not_found' };

const SEGMENT = /^[A-Za-z0-9._~-]+$/;
const PARAM = /^:([a-z_][a-z0-9_]*)$/i;

/** A small router: routes are checked when added (bad pattern or duplicate throws), matched by compiled RegExp. */
export class Router<T> {
  private readonly routes: Compiled<T>[] = [];
  private readonly params: Compiled<T>[] = [];
  private readonly statics = new Map<string, Map<string, Compiled<T>>>();

  /** Add a route; throws at start-up on a malformed pattern or a duplicate of an existing method and shape. */
  add(method: string, pattern: string, value: T): void {
    if (!/^[A-Z]+$/.test(method)) throw new Error(`Cannot add route "${method} ${pattern}": bad method`);
    if (!pattern.startsWith('/')) throw new Error(`Cannot add route "${method} ${pattern}": pattern must start with /`);
    const keys: string[] = [];
    const parts = pattern === '/' ? [] : pattern.slice(1).split('/');
    let source = '^';
    for (const part of parts) {
      const param = PARAM.exec(part);
      if (param) {
        if (keys.includes(param[1])) throw new Error(`Cannot add route "${method} ${pattern}": param "${param[1]}" repeats`);
        keys.push(param[1]);
        source += `/(?<${param[1]}>[^/]+)`;
      } else if (SEGMENT.test(part)) {
        source += '/' + part.replace(/[.]/g, '\\.');
      } else {
        throw new Error(`Cannot add route "${method} ${pattern}": bad segment "${part}"`);
      }
    }
    source += pattern === '/' ? '/$' : '$';
    const shape = pattern.replace(/:[^/]+/g, ':');
    for (const r of this.routes) {
      if (r.method === method && r.pattern.replace(/:[^/]+/g, ':') === shape) {
        throw new Error(`Cannot add route "${method} ${pattern}": duplicates "${r.method} ${r.pattern}"`);
      }
    }
    const compiled: Compiled<T> = {
      method,
      pattern,
      regex: new RegExp(source),
      keys,
      value,
      staticPath: keys.length === 0 ? pattern : null,
    };
    this.routes.push(compiled);
    if (!compiled.staticPath) this.params.push(compiled);
    else {
      let byMethod = this.statics.get(compiled.staticPath);
      if (!byMethod) this.statics.set(compiled.staticPath, (byMethod = new Map()));
      byMethod.set(method, compiled);
    }
  }

  /** Match a method and a path (no query string). HEAD falls back to GET. */
  match(method: string, path: string): Match<T> {
    const byMethod = this.statics.get(path);
    if (byMethod) {
      const hit = byMethod.get(method) ?? (method === 'HEAD' ? byMethod.get('GET') : undefined);
      if (hit) return { kind: 'found', value: hit.value, params: {}, pattern: hit.pattern };
      // A path some route names literally is that resource: another method is 405, never an id of a param route
      // (GET /v1/public/payouts/batch is not the payout "batch").
      return { kind: 'method_not_allowed', allow: allowed(byMethod.keys()) };
    }
    // Static paths were answered above; what is left can only match param routes, the first that takes the method.
    let allow: string[] | null = null;
    for (const r of this.params) {
      const m = r.regex.exec(path);
      if (!m) continue;
      if (r.method === method || (method === 'HEAD' && r.method === 'GET')) return found(r, m);
      (allow ??= []).push(r.method);
    }
    return allow ? { kind: 'method_not_allowed', allow: allowed(allow) } : { kind: 'not_found' };
  }

  /** Every route as `[method, pattern]`, in the order added. */
  list(): Array<[string, string]> {
    return this.routes.map((r) => [r.method, r.pattern]);
  }
}

function found<T>(r: Compiled<T>, m: RegExpExecArray): Match<T> {
  const params: Record<string, string> = {};
  for (const k of r.keys) {
    try {
      params[k] = decodeURIComponent(m.groups![k]);
    } catch {
      params[k] = m.groups![k];
    }
  }
  return { kind: 'found', value: r.value, params, pattern: r.pattern };
}

/** The methods of a 405's Allow, sorted, with HEAD wherever GET is. */
function allowed(methods: Iterable<string>): string[] {
  const set = new Set(methods);
  if (set.has('GET')) set.add('HEAD');
  return [...set].sort();
}
