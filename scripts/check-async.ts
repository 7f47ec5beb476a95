/**
 * The storage seam's rules that the type checker can see, over src/, test/ and scripts/:
 * - the whole program type-checks (tsx, which runs the tests, does not check types);
 * - no promise is left floating: a call whose value is a promise, used as a statement, is awaited, returned or
 *   marked `void` on purpose. A forgotten `await` on a write would run it outside its transaction, after the
 *   body ended (the engine refuses it then, but only at run time, on the path a test happens to take);
 * - no `forEach` with an async callback (its promises are dropped);
 * - only the SQLite engine (src/platform/storage/sqlite/) imports better-sqlite3, and no file outside the storage
 *   engines (src/platform/storage/) uses the
 *   store's `sqliteHandle`.
 * Prints each finding as `file:line: message` and exits 1 if there is any.
 */
import ts from 'typescript';
import { dirname, relative, resolve } from 'node:path';

const root = resolve(dirname(new URL(import.meta.url).pathname), '..');
const configPath = ts.findConfigFile(root, ts.sys.fileExists, 'tsconfig.json');
if (!configPath) throw new Error(`cannot check: no tsconfig.json under ${root}`);
const parsed = ts.parseJsonConfigFileContent(ts.readConfigFile(configPath, ts.sys.readFile).config, ts.sys, root);
const program = ts.createProgram(parsed.fileNames, parsed.options);
const checker = program.getTypeChecker();
const findings: string[] = [];

function report(sf: ts.SourceFile, node: ts.Node, message: string): void {
  const { line } = sf.getLineAndCharacterOfPosition(node.getStart(sf));
  findings.push(`${relative(root, sf.fileName)}:${line + 1}: ${message}`);
}

function isThenable(type: ts.Type): boolean {
  if (type.isUnion()) return type.types.some(isThenable);
  const then = type.getProperty('then');
  if (!then) return false;
  const decl = then.valueDeclaration ?? then.declarations?.[0];
  if (!decl) return false;
  const t = checker.getTypeOfSymbolAtLocation(then, decl);
  return t.getCallSignatures().length > 0;
}

/** node:test's registrations return promises that the runner itself awaits. */
const RUNNER_CALLS = new Set(['test', 'describe', 'it', 'suite', 'before', 'after', 'beforeEach', 'afterEach']);

/** A promise chain that ends in a rejection handler (`.catch(f)`, `.then(f, g)`) is handled. */
function handled(e: ts.CallExpression): boolean {
  if (ts.isIdentifier(e.expression) && RUNNER_CALLS.has(e.expression.text)) return true;
  if (!ts.isPropertyAccessExpression(e.expression)) return false;
  const name = e.expression.name.text;
  return name === 'catch' || (name === 'then' && e.arguments.length >= 2);
}

function unwrap(e: ts.Expression): ts.Expression {
  while (ts.isParenthesizedExpression(e) || ts.isNonNullExpression(e)) e = e.expression;
  return e;
}

for (const d of ts.getPreEmitDiagnostics(program)) {
  const where = d.file ? `${relative(root, d.file.fileName)}:${d.file.getLineAndCharacterOfPosition(d.start ?? 0).line + 1}` : 'tsconfig';
  findings.push(`${where}: ${ts.flattenDiagnosticMessageText(d.messageText, ' ')}`);
}

for (const sf of program.getSourceFiles()) {
  if (sf.isDeclarationFile || sf.fileName.includes('/node_modules/')) continue;
  const rel = relative(root, sf.fileName);
  const inEngine = rel.startsWith('src/platform/storage/');
  const inSqliteEngine = rel.startsWith('src/platform/storage/sqlite/');
  const visit = (node: ts.Node): void => {
    if (ts.isExpressionStatement(node)) {
      const e = unwrap(node.expression);
      if ((ts.isCallExpression(e) || ts.isNewExpression(e)) && !(ts.isCallExpression(e) && handled(e)) && isThenable(checker.getTypeAtLocation(e))) {
        report(sf, node, `a promise is left floating: await it, return it, or mark it \`void\` (${e.getText(sf).slice(0, 80)})`);
      }
    }
    if (ts.isCallExpression(node) && ts.isPropertyAccessExpression(node.expression) && node.expression.name.text === 'forEach') {
      const fn = node.arguments[0];
      if (fn && (ts.isArrowFunction(fn) || ts.isFunctionExpression(fn)) && fn.modifiers?.some((m) => m.kind === ts.SyntaxKind.AsyncKeyword)) {
        report(sf, node, 'forEach with an async callback drops its promises: use for…of with await');
      }
    }
    if (rel.startsWith('src/') && !inSqliteEngine && ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier) && node.moduleSpecifier.text === 'better-sqlite3') {
      report(sf, node, 'only the SQLite engine (src/platform/storage/sqlite/) imports better-sqlite3');
    }
    if (rel.startsWith('src/') && !inEngine) {
      if (ts.isPropertyAccessExpression(node) && node.name.text === 'sqliteHandle') {
        report(sf, node, "only the storage engine (src/platform/storage/) uses the store's sqliteHandle");
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
}

for (const f of findings) console.log(f);
console.log(findings.length === 0 ? 'check-async: ok' : `check-async: ${findings.length} finding(s)`);
process.exit(findings.length === 0 ? 0 : 1);
