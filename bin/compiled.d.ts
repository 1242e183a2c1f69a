// Types of bin/compiled.js (plain JavaScript, so node runs it before any TypeScript can load), for the tests.
export declare const SOURCE_FOLDERS: readonly string[];
export declare function sourceFiles(root: string): string[];
export declare function fingerprint(root: string, files: readonly string[]): string;
export declare function compileInto(root: string, files: readonly string[], outDir: string): Promise<void>;
export declare function compiledEntry(root: string, entry: string, cacheDir?: string): Promise<string | undefined>;
export declare function codeCacheOn(env: Record<string, string | undefined>): boolean;
