// Lists the functions of src/*.ts longer than a limit, and counts those over 40 and 60 lines
// (issue 31: functions tell one story). A function's length is its lines from the line of its
// name (or `=>`) to its closing brace, both included; a nested function is counted on its own
// and inside its outer one. Functions, methods, constructors, accessors and arrow functions
// with a block body count.
//
//   node scripts/function_lengths.mjs [--over N]
import { readdirSync, readFileSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const src = join(dirname(fileURLToPath(import.meta.url)), '..', 'src');
const overIndex = process.argv.indexOf('--over');
const listOver = overIndex > 0 ? Number(process.argv[overIndex + 1]) : 40;

const lengths = [];
for (const file of readdirSync(src).filter((f) => f.endsWith('.ts')).sort()) {
  const text = readFileSync(join(src, file), 'utf8');
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const visit = (node) => {
    const isFunction =
      ts.isFunctionDeclaration(node) || ts.isMethodDeclaration(node) || ts.isConstructorDeclaration(node) ||
      ts.isGetAccessorDeclaration(node) || ts.isSetAccessorDeclaration(node) || ts.isFunctionExpression(node) ||
      (ts.isArrowFunction(node) && ts.isBlock(node.body));
    if (isFunction && node.body !== undefined) {
      const first = sf.getLineAndCharacterOfPosition(node.getStart(sf)).line;
      const last = sf.getLineAndCharacterOfPosition(node.end).line;
      const name = node.name?.getText(sf) ?? (ts.isVariableDeclaration(node.parent) ? node.parent.name.getText(sf) : '(anonymous)');
      lengths.push({ where: `${file}:${first + 1}`, name, lines: last - first + 1 });
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
}
lengths.sort((a, b) => b.lines - a.lines);
for (const f of lengths.filter((f) => f.lines > listOver)) console.log(`${String(f.lines).padStart(4)}  ${f.name}  ${f.where}`);
console.log(`${lengths.length} functions; over 40 lines: ${lengths.filter((f) => f.lines > 40).length}; over 60 lines: ${lengths.filter((f) => f.lines > 60).length}`);
