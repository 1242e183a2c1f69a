// Types of bin/compiled.js (plain JavaScript, so node runs it before any TypeScript can load), for the tests.
export declare const SOURCE_FOLDERS: readonly string[];
export declare const INLINED: readonly string[];
export type Sources = { name: string; entry: string; contents: Map<string, Buffer>; tsconfig: Buffer | null };
export declare function sourceFiles(root: string): string[];
export declare function readSources(root: string, entry: string): Sources;
export declare function compileInto(root: string, sources: Sources, outDir: string): Promise<void>;
export declare function copyIntact(copy: string): boolean;
export declare function compiledEntry(root: string, entry: string, cacheDir?: string): Promise<string | undefined>;
export declare function codeCacheOn(env: Record<string, string | undefined>): boolean;
