#!/usr/bin/env node
// Runs under the project's Node (node_modules/.bin/node, put first on PATH by npx and npm scripts). The process
// settings come first, so that no command's modules load twice.
import { relaunchWithProcessSettings } from '../src/process-settings.ts';

relaunchWithProcessSettings();
await import('../src/cli.ts');
