// ESLint for the web console's modules (console/*.js: eslint:recommended, ES
// modules, browser globals) and for the browser tests here (node's globals too:
// they run in node and hand functions to the page). The ctest test console_lint
// runs it from the repository root and fails on any finding, warnings included
// (--max-warnings 0).
import js from '@eslint/js';
import globals from 'globals';

export default [
  js.configs.recommended,
  {
    files: ['**/*.js'],
    languageOptions: {
      ecmaVersion: 2022,
      sourceType: 'module',
      globals: { ...globals.browser },
    },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
  },
  {
    files: ['**/*.mjs'],
    languageOptions: {
      ecmaVersion: 2022,
      sourceType: 'module',
      globals: { ...globals.node, ...globals.browser },
    },
  },
];
