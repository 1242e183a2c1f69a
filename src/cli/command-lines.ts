// The commands the program prints for the user to run (start-up lines, the demo's export line). A command finds the
// service through <dataDir>/service.json, so under a data directory other than the default the line carries it:
// run from the same directory, as printed, it reaches the same service, Redis and signing key.
import { DEFAULT_DATA_DIR } from '../config.js';

/** A word the shell reads back as `text`: as it is when it holds nothing the shell would take apart, else single-quoted. */
export function shellWord(text: string): string {
  return /^[A-Za-z0-9_./:@%+=,-]+$/.test(text) ? text : `'${text.replaceAll("'", "'\\''")}'`;
}

/** `npx interlock`, with `INTERLOCK_DATA_DIR=<dataDir>` before it when the data directory is not the default. */
export function interlockCommand(dataDir: string): string {
  return dataDir === DEFAULT_DATA_DIR ? 'npx interlock' : `INTERLOCK_DATA_DIR=${shellWord(dataDir)} npx interlock`;
}

/** The command that starts the service of this data directory again: under another one, `npm start` alone starts the default's. */
export function startLine(dataDir: string): string {
  return dataDir === DEFAULT_DATA_DIR ? 'npm start' : `INTERLOCK_DATA_DIR=${shellWord(dataDir)} npm start`;
}
