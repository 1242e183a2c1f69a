// Rule: makeDirectory makes the directory the path names, as Node's recursive mkdir would (without its hang under
// /proc): each level as given, so a `..` after a symlink is the link target's parent, as the kernel and every later use
// of the same string read it; relative paths, trailing separators and `.` levels are made as named; a file at the last
// level is EEXIST and one above it ENOTDIR.
import { accessSync, constants, existsSync, mkdirSync, mkdtempSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { makeDirectory } from '../src/files.js';

const root = mkdtempSync(join(tmpdir(), 'interlock-make-directory-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

it('a .. after a symlink to a directory names the target\'s parent: that directory is made, and the path then serves', () => {
  mkdirSync(join(root, 'real', 'inner'), { recursive: true });
  mkdirSync(join(root, 'x'));
  symlinkSync(join(root, 'real', 'inner'), join(root, 'x', 'link'));
  const given = `${join(root, 'x', 'link')}/../data`;
  makeDirectory(given, 0o700);
  expect(existsSync(join(root, 'real', 'data'))).toBe(true);
  expect(existsSync(join(root, 'x', 'data'))).toBe(false);
  expect(() => accessSync(given, constants.W_OK | constants.X_OK)).not.toThrow();
});

it('makes relative paths, trailing separators and . levels as named, with the mode given', () => {
  const named = `${relative(process.cwd(), join(root, 'rel'))}/./a/b/`;
  makeDirectory(named, 0o700);
  expect(statSync(join(root, 'rel', 'a', 'b')).isDirectory()).toBe(true);
  expect(statSync(join(root, 'rel', 'a', 'b')).mode & 0o777).toBe(0o700);
  makeDirectory(named, 0o700);
});

it('a file at the last level is EEXIST, one above it ENOTDIR', () => {
  writeFileSync(join(root, 'file'), '');
  expect(() => makeDirectory(join(root, 'file'))).toThrow(expect.objectContaining({ code: 'EEXIST' }));
  expect(() => makeDirectory(join(root, 'file', 'below'))).toThrow(expect.objectContaining({ code: 'ENOTDIR' }));
});
