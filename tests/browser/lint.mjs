// Lints the web console's modules (console/*.js) and these browser tests with
// ESLint (eslint.config.mjs here). Any finding, warning or error, fails.
//
// node lint.mjs --root REPOSITORY_ROOT
// Exit 0: clean; 1: findings (printed); 77: skipped (ESLint not installed; said why).
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const SKIP = 77;
const here = path.dirname(fileURLToPath(import.meta.url));
const i = process.argv.indexOf('--root');
const root = path.resolve(i > 0 ? process.argv[i + 1] : path.join(here, '..', '..'));

let ESLint;
try {
  ({ ESLint } = await import('eslint'));
} catch (e) {
  console.log(`SKIP: eslint is not installed in tests/browser (scripts/setup.sh runs npm ci there): ${e.message}`);
  process.exit(SKIP);
}

const files = [
  ...readdirSync(path.join(root, 'console')).filter((f) => f.endsWith('.js')).map((f) => path.join(root, 'console', f)),
  ...readdirSync(here).filter((f) => f.endsWith('.mjs')).map((f) => path.join(here, f)),
];
const eslint = new ESLint({ cwd: root, overrideConfigFile: path.join(here, 'eslint.config.mjs') });
// A file ESLint would skip (outside its base path, ignored) comes back with a warning: a finding.
const results = await eslint.lintFiles(files);
const findings = results.reduce((n, r) => n + r.errorCount + r.warningCount, 0);
if (findings) {
  console.log((await eslint.loadFormatter('stylish')).format(results));
  console.log(`FAIL: ${findings} finding(s) in ${files.length} files`);
  process.exit(1);
}
console.log(`ok: ${files.length} files lint clean (${files.map((f) => path.relative(root, f)).join(' ')})`);
