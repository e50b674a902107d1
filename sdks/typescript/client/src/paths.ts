/**
 * Workspace paths as the wire defines them (`^[A-Za-z0-9][A-Za-z0-9._/-]{0,255}$`, no empty,
 * `.` or `..` component): checked before a request is sent, rejected and never repaired.
 *
 * @module
 */

import { WspPathError } from "./errors.js";

/** The longest path the wire accepts, in bytes (all its characters are ASCII). */
export const MAX_PATH_LENGTH = 256;

const PATH = /^[A-Za-z0-9][A-Za-z0-9._/-]*$/;
const PREFIX = /^[A-Za-z0-9._/-]*$/;

/**
 * Returns `path` when it is a valid workspace path, else throws {@link WspPathError}.
 *
 * ```ts
 * checkPath("notes/plan.md"); // "notes/plan.md"
 * checkPath("a/../b");        // throws WspPathError
 * ```
 */
export function checkPath(path: string): string {
  if (path.length === 0) throw new WspPathError(path, "it is empty");
  if (path.length > MAX_PATH_LENGTH) throw new WspPathError(path, `it is longer than ${MAX_PATH_LENGTH} bytes`);
  if (!PATH.test(path)) {
    throw new WspPathError(path, "it must start with a letter or digit and hold only A-Z a-z 0-9 . _ / -");
  }
  if (path.split("/").some((c) => c === "" || c === "." || c === "..")) {
    throw new WspPathError(path, "it has an empty, '.' or '..' component");
  }
  return path;
}

/** Whether `path` is a valid workspace path. */
export function isPath(path: string): boolean {
  try {
    checkPath(path);
    return true;
  } catch {
    return false;
  }
}

/**
 * Returns `prefix` when it is a valid list prefix (a plain string prefix of paths: possibly
 * empty, possibly ending in `/` or in a partial name), else throws {@link WspPathError}.
 */
export function checkPrefix(prefix: string): string {
  if (prefix.length > MAX_PATH_LENGTH) throw new WspPathError(prefix, `it is longer than ${MAX_PATH_LENGTH} bytes`);
  if (!PREFIX.test(prefix) || (prefix.length > 0 && !/^[A-Za-z0-9]/.test(prefix))) {
    throw new WspPathError(prefix, "a prefix starts with a letter or digit and holds only A-Z a-z 0-9 . _ / -");
  }
  const complete = prefix.split("/").slice(0, -1);
  if (complete.some((c) => c === "" || c === "." || c === "..")) {
    throw new WspPathError(prefix, "it has an empty, '.' or '..' component");
  }
  return prefix;
}

/** The path as one URL path segment (`/` sent as `%2F`, which the server decodes once). */
export function pathSegment(path: string): string {
  return encodeURIComponent(checkPath(path));
}
