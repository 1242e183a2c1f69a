// The start-up lines of `serve` about the API tokens it generated. A token is never logged (webhooks/api/tokens.ts),
// and stdout is a log wherever it is not a terminal: compose keeps the api's as its container log.
import { DEFAULT_DATA_DIR } from '../config.js';
import { shellWord } from './command-lines.js';

/**
 * The Tokens lines: the tokens themselves only when `terminal`; otherwise where they are kept and how to read one.
 * `serviceFile` is the service.json this process wrote (it holds them too), else null.
 */
export function tokenLines(tokens: Readonly<Record<string, string>>, tokensFile: string, serviceFile: string | null, dataDir: string, terminal: boolean): string[] {
  if (terminal) return [`  Tokens    ${Object.entries(tokens).map(([role, token]) => `${role} ${token}`).join('\n            ')}`, `            (kept in ${tokensFile})`];
  const roles = Object.keys(tokens);
  if (serviceFile === null || roles.length === 0) return [`  Tokens    not printed (stdout is not a terminal): kept in ${tokensFile}, one name:role:token a line`];
  const [first = '', ...others] = roles;
  const from = dataDir === DEFAULT_DATA_DIR ? '' : `INTERLOCK_DATA_DIR=${shellWord(dataDir)} `;
  return [
    `  Tokens    not printed (stdout is not a terminal): kept in ${tokensFile}, and for scripts in ${serviceFile}; read one with`,
    `            ${from}node -pe 'require(path.resolve(process.env.INTERLOCK_DATA_DIR || ".data", "service.json")).tokens.${first}'${others.length === 0 ? '' : `   (or .${others.join(', .')})`}`,
  ];
}
