#!/usr/bin/env node
// Loads the TypeScript CLI through tsx's loader so `npx interlock` works from a checkout without a build step.
import { register } from 'tsx/esm/api';

register();
await import('../src/main.ts');
