#!/usr/bin/env node
// Runs under the project's Node (node_modules/.bin/node, put first on PATH by npx and npm scripts).
await import('../src/cli.ts');
