/**
 * The shape of src/, as docs/architecture.md draws it:
 * - the folders directly under src/ are tiers, in the order of TIERS below: a file imports only from its own
 *   tier or a lower one (type-only imports count: they tie the files together just as much);
 * - inside a tier the unit is the folder one level down (src/money/payments/), a file directly in the tier
 *   folder being a unit of its own: the units of a tier import each other, but never round a circle;
 * - no import circle between files;
 * - no source file over FILE_LINES lines, no function over FUNCTION_LINES lines (the route table aside).
 * Prints each finding as `file:line: message` and exits 1 if there is any; `--graph` also prints which folder
 * imports which; `--src DIR` checks that tree instead of src/.
 */
import ts from 'typescript';
import { readdirSync, readFileSync, existsSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

/** The tiers, bottom first; the root files of src/ ('.') sit on top. */
export const TIERS: readonly string[] = ['platform', 'money', 'banks', 'web', 'cli', '.'];

/** Named limits of size. */
export const SIZE_LIMITS = { file_lines: 500, function_lines: 80 };

/** Functions allowed past the function limit: a table that reads best as one list. */
const LONG_ALLOWED = new Set(['src/routes.ts:buildRouter']);

// `--src DIR` checks another tree laid out like src/ (the checker's own test gives it one that breaks each rule).
const srcAt = process.argv.indexOf('--src');
const src = srcAt > 0 && process.argv[srcAt + 1] ? resolve(process.argv[srcAt + 1]) : join(resolve(dirname(new URL(import.meta.url).pathname), '..'), 'src');
const root = dirname(src);
const findings: string[] = [];

function walk(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? walk(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  );
}

/** A file's tier: its first folder under src/, or '.' for the root files. */
function tierOf(file: string): string {
  const rel = relative(src, file);
  return rel.includes('/') ? rel.slice(0, rel.indexOf('/')) : '.';
}

/** A file's unit inside its tier: the folder one level down (money/payments), or the file itself when it sits directly in its tier folder (platform/log.ts) or in src/. */
function unitOf(file: string): string {
  const parts = relative(src, file).split('/');
  return parts.length <= 2 ? parts.join('/') : `${parts[0]}/${parts[1]}`;
}

const rank = new Map<string, number>();
TIERS.forEach((t, i) => rank.set(t, i));

function resolveImport(from: string, spec: string): string | null {
  if (!spec.startsWith('.')) return null;
  const base = resolve(dirname(from), spec);
  for (const c of [`${base}.ts`, join(base, 'index.ts')]) if (existsSync(c)) return c;
  return null;
}

const files = walk(src);
const edges = new Map<string, Array<{ to: string; line: number }>>();
// unit → the units it imports, each with the first place that does.
const unitEdges = new Map<string, Map<string, string>>();

for (const file of files) {
  const text = readFileSync(file, 'utf8');
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const rel = relative(root, file);
  const lines = text.split('\n').length - (text.endsWith('\n') ? 1 : 0);
  if (lines > SIZE_LIMITS.file_lines) findings.push(`${rel}:1: ${lines} lines; the limit is ${SIZE_LIMITS.file_lines}`);
  const out: Array<{ to: string; line: number }> = [];
  const visit = (node: ts.Node): void => {
    let spec: string | undefined;
    if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)) {
      spec = node.moduleSpecifier.text;
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword && node.arguments[0] && ts.isStringLiteral(node.arguments[0])) {
      spec = node.arguments[0].text;
    } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument) && ts.isStringLiteral(node.argument.literal)) {
      spec = node.argument.literal.text;
    }
    if (spec) {
      const to = resolveImport(file, spec);
      if (to && to.startsWith(src)) out.push({ to, line: sf.getLineAndCharacterOfPosition(node.getStart(sf)).line + 1 });
    }
    if (ts.isFunctionLike(node) && 'body' in node && node.body) {
      const start = sf.getLineAndCharacterOfPosition(node.getStart(sf)).line;
      const end = sf.getLineAndCharacterOfPosition(node.getEnd()).line;
      const name = node.name && ts.isIdentifier(node.name) ? node.name.text : '(anonymous)';
      const span = end - start + 1;
      if (span > SIZE_LIMITS.function_lines && !LONG_ALLOWED.has(`${rel}:${name}`)) {
        findings.push(`${rel}:${start + 1}: function ${name} has ${span} lines; the limit is ${SIZE_LIMITS.function_lines}`);
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  edges.set(file, out);
  const from = tierOf(file);
  const unit = unitOf(file);
  if (!rank.has(from)) findings.push(`${rel}:1: folder "${from}" is no tier in scripts/check-layers.ts`);
  for (const { to, line } of out) {
    const target = tierOf(to);
    const toUnit = unitOf(to);
    if (toUnit !== unit) {
      let set = unitEdges.get(unit);
      if (!set) unitEdges.set(unit, (set = new Map()));
      if (!set.has(toUnit)) set.set(toUnit, `${rel}:${line}`);
    }
    const a = rank.get(from);
    const b = rank.get(target);
    if (a !== undefined && b !== undefined && b > a) {
      findings.push(`${rel}:${line}: ${from}/ imports ${relative(root, to)}, which is in a tier above`);
    }
  }
}

// Import circles between files: Tarjan's strongly connected components.
{
  let index = 0;
  const idx = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const on = new Set<string>();
  const strong = (v: string): void => {
    idx.set(v, index);
    low.set(v, index++);
    stack.push(v);
    on.add(v);
    for (const { to } of edges.get(v) ?? []) {
      if (!idx.has(to)) {
        strong(to);
        low.set(v, Math.min(low.get(v)!, low.get(to)!));
      } else if (on.has(to)) low.set(v, Math.min(low.get(v)!, idx.get(to)!));
    }
    if (low.get(v) === idx.get(v)) {
      const ring: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        on.delete(w);
        ring.push(relative(root, w));
      } while (w !== v);
      if (ring.length > 1) findings.push(`${ring[0]}:1: import circle: ${ring.sort().join(' ⇄ ')}`);
    }
  };
  for (const f of files) if (!idx.has(f)) strong(f);
}

// Circles between the units of one tier (the root files' are file circles, found above): Tarjan again.
{
  const tierOfUnit = (u: string): string => (u.includes('/') ? u.slice(0, u.indexOf('/')) : '.');
  let index = 0;
  const idx = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const on = new Set<string>();
  const inTier = (v: string): string[] => [...(unitEdges.get(v)?.keys() ?? [])].filter((w) => tierOfUnit(w) === tierOfUnit(v) && tierOfUnit(v) !== '.');
  const strong = (v: string): void => {
    idx.set(v, index);
    low.set(v, index++);
    stack.push(v);
    on.add(v);
    for (const w of inTier(v)) {
      if (!idx.has(w)) {
        strong(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (on.has(w)) low.set(v, Math.min(low.get(v)!, idx.get(w)!));
    }
    if (low.get(v) === idx.get(v)) {
      const ring: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        on.delete(w);
        ring.push(w);
      } while (w !== v);
      if (ring.length > 1) {
        ring.sort();
        const next = inTier(ring[0]).find((u) => ring.includes(u))!;
        findings.push(`${unitEdges.get(ring[0])!.get(next)}: folder circle in ${tierOfUnit(ring[0])}/: ${ring.join(' ⇄ ')}`);
      }
    }
  };
  for (const u of [...unitEdges.keys()].sort()) if (!idx.has(u)) strong(u);
}

if (process.argv.includes('--graph')) {
  for (const [from, to] of [...unitEdges].sort()) console.log(`${from} -> ${[...to.keys()].sort().join(' ')}`);
}
for (const f of findings) console.log(f);
if (findings.length > 0) {
  console.log(`check-layers: ${findings.length} finding(s)`);
  process.exit(1);
}
console.log(`check-layers: ok (${files.length} files in ${TIERS.length} tiers, ${new Set(files.map(unitOf)).size} units)`);
