// What a source file imports, read with the TypeScript parser rather than text patterns: a regex misses an import
// split over lines, an `import x = require()`, a type position `import('x')` or a re-export, and reads imports
// inside strings and comments. The fence tests rest on this, so its own test feeds it every form.
import ts from 'typescript';

export type ImportKind = 'import' | 'export' | 'dynamic-import' | 'require' | 'import-equals' | 'import-type';

/** One module reference. `specifier` is null when it is computed (`import(name)`), which no fence can check. */
export type ImportSite = { kind: ImportKind; specifier: string | null; typeOnly: boolean; line: number };

function literalText(node: ts.Node | undefined): string | null {
  if (node && (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node))) return node.text;
  return null;
}

function scriptKind(fileName: string): ts.ScriptKind {
  if (/\.[cm]?js$/.test(fileName)) return ts.ScriptKind.JS;
  if (fileName.endsWith('.tsx')) return ts.ScriptKind.TSX;
  return ts.ScriptKind.TS;
}

function declaresRequire(file: ts.SourceFile): boolean {
  let found = false;
  const visit = (node: ts.Node): void => {
    if (found) return;
    const named = ts.isFunctionDeclaration(node) || ts.isVariableDeclaration(node) || ts.isParameter(node) || ts.isImportSpecifier(node) || ts.isImportClause(node);
    if (named && node.name && ts.isIdentifier(node.name) && node.name.text === 'require') found = true;
    else ts.forEachChild(node, visit);
  };
  visit(file);
  return found;
}

export function collectImports(source: string, fileName = 'inline.ts'): ImportSite[] {
  const file = ts.createSourceFile(fileName, source, ts.ScriptTarget.Latest, true, scriptKind(fileName));
  const sites: ImportSite[] = [];
  // A file that declares its own `require` (the sandbox names a lookup helper so) calls that, not Node's.
  const ownRequire = declaresRequire(file);
  const add = (kind: ImportKind, node: ts.Node, specifier: string | null, typeOnly: boolean) =>
    sites.push({ kind, specifier, typeOnly, line: file.getLineAndCharacterOfPosition(node.getStart(file)).line + 1 });

  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node)) {
      add('import', node, literalText(node.moduleSpecifier), node.importClause?.isTypeOnly ?? false);
    } else if (ts.isExportDeclaration(node) && node.moduleSpecifier) {
      add('export', node, literalText(node.moduleSpecifier), node.isTypeOnly);
    } else if (ts.isImportEqualsDeclaration(node) && ts.isExternalModuleReference(node.moduleReference)) {
      add('import-equals', node, literalText(node.moduleReference.expression), node.isTypeOnly);
    } else if (ts.isImportTypeNode(node)) {
      const argument = node.argument;
      add('import-type', node, ts.isLiteralTypeNode(argument) ? literalText(argument.literal) : null, true);
    } else if (ts.isCallExpression(node)) {
      if (node.expression.kind === ts.SyntaxKind.ImportKeyword) add('dynamic-import', node, literalText(node.arguments[0]), false);
      else if (!ownRequire && ts.isIdentifier(node.expression) && node.expression.text === 'require') add('require', node, literalText(node.arguments[0]), false);
    }
    ts.forEachChild(node, visit);
  };
  visit(file);
  return sites;
}

export type ClockOrRandomUse = { what: 'Date.now' | 'new Date()' | 'Math.random' | 'performance.now'; line: number };

/** Reads of the wall clock or of randomness, which the pure core must take as inputs. Comments and strings do not count. */
export function clockAndRandomness(source: string, fileName = 'inline.ts'): ClockOrRandomUse[] {
  const file = ts.createSourceFile(fileName, source, ts.ScriptTarget.Latest, true, scriptKind(fileName));
  const uses: ClockOrRandomUse[] = [];
  const line = (node: ts.Node) => file.getLineAndCharacterOfPosition(node.getStart(file)).line + 1;
  const visit = (node: ts.Node): void => {
    if (ts.isPropertyAccessExpression(node) && ts.isIdentifier(node.expression)) {
      const name = `${node.expression.text}.${node.name.text}`;
      if (name === 'Date.now' || name === 'Math.random' || name === 'performance.now') uses.push({ what: name, line: line(node) });
    } else if (ts.isNewExpression(node) && ts.isIdentifier(node.expression) && node.expression.text === 'Date' && (node.arguments?.length ?? 0) === 0) {
      uses.push({ what: 'new Date()', line: line(node) });
    }
    ts.forEachChild(node, visit);
  };
  visit(file);
  return uses;
}

/** The package a bare specifier names (`stripe/lib/x` → `stripe`, `@scope/pkg/y` → `@scope/pkg`), or null for a relative one. */
export function packageOf(specifier: string): string | null {
  if (specifier.startsWith('.') || specifier.startsWith('/')) return null;
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : (parts[0] ?? specifier);
}
