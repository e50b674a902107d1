/**
 * The reversible mapping of LangGraph namespaces and keys to wsp workspace paths.
 *
 * A workspace path allows only `A-Z a-z 0-9 . _ / -` and no empty, `.` or `..` component,
 * while a namespace label or a key is any string. Each label and the key are encoded into one
 * path component each:
 *
 * - the UTF-8 bytes `A-Z a-z 0-9 -` and `.` (except as the first byte) are kept;
 * - every other byte, `_` included, becomes `_` and two uppercase hex digits (`/` is `_2F`,
 *   a leading `.` is `_2E`, `é` is `_C3_A9`);
 * - the empty string is `_` alone (which no other string encodes to).
 *
 * An item `(namespace, key)` lives at `<root>/<label>/.../<label>/<key>.json`; the `.json`
 * suffix marks the item (so a namespace label never collides with a key). The encoding is
 * canonical: a path is an item's only if re-encoding its decoded labels gives it back, so
 * every item has exactly one path and every path at most one item. The whole path must fit
 * the wire's 256 bytes; a longer one is refused (`WspPathError`), never shortened.
 *
 * ```ts
 * itemPath("store", ["users", "u-1"], "prefs")   // "store/users/u-1/prefs.json"
 * itemPath("store", ["a/b"], "café")              // "store/a_2Fb/caf_C3_A9.json"
 * parseItemPath("store", "store/a_2Fb/caf_C3_A9.json") // { namespace: ["a/b"], key: "café" }
 * ```
 *
 * @module
 */

import { checkPath } from "@wsp/client";

/** The suffix of an item's file. */
export const ITEM_SUFFIX = ".json";

const HEX = "0123456789ABCDEF";

function kept(byte: number, first: boolean): boolean {
  return (
    (byte >= 0x30 && byte <= 0x39) ||
    (byte >= 0x41 && byte <= 0x5a) ||
    (byte >= 0x61 && byte <= 0x7a) ||
    byte === 0x2d ||
    (byte === 0x2e && !first)
  );
}

/** One label (or key) as one path component. */
export function encodeLabel(label: string): string {
  if (label === "") return "_";
  const bytes = new TextEncoder().encode(label);
  let out = "";
  bytes.forEach((byte, i) => {
    out += kept(byte, i === 0) ? String.fromCharCode(byte) : `_${HEX[byte >> 4]}${HEX[byte & 15]}`;
  });
  return out;
}

/** The label a component encodes, or `undefined` when it is not a canonical encoding. */
export function decodeLabel(component: string): string | undefined {
  if (component === "_") return "";
  const bytes: number[] = [];
  for (let i = 0; i < component.length; ) {
    const c = component.charCodeAt(i);
    if (c === 0x5f) {
      const digits = component.slice(i + 1, i + 3);
      if (digits.length !== 2) return undefined;
      const hi = HEX.indexOf(digits.charAt(0));
      const lo = HEX.indexOf(digits.charAt(1));
      if (hi < 0 || lo < 0) return undefined;
      const byte = hi * 16 + lo;
      if (kept(byte, bytes.length === 0)) return undefined;
      bytes.push(byte);
      i += 3;
    } else {
      if (!kept(c, bytes.length === 0)) return undefined;
      bytes.push(c);
      i += 1;
    }
  }
  if (bytes.length === 0) return undefined;
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(new Uint8Array(bytes));
  } catch {
    return undefined;
  }
}

/** The path prefix under which the items of `namespace` and of its sub-namespaces live. */
export function namespacePrefix(root: string, namespace: readonly string[]): string {
  return [root, ...namespace.map(encodeLabel)].join("/") + "/";
}

/** The path of the item `key` of `namespace`; throws `WspPathError` when it is too long. */
export function itemPath(root: string, namespace: readonly string[], key: string): string {
  return checkPath(namespacePrefix(root, namespace) + encodeLabel(key) + ITEM_SUFFIX);
}

/** The namespace and key of an item's path under `root`, or `undefined` for any other path. */
export function parseItemPath(root: string, path: string): { namespace: string[]; key: string } | undefined {
  if (!path.startsWith(`${root}/`) || !path.endsWith(ITEM_SUFFIX)) return undefined;
  const components = path.slice(root.length + 1, -ITEM_SUFFIX.length).split("/");
  const labels = components.map(decodeLabel);
  if (labels.some((l) => l === undefined)) return undefined;
  const decoded = labels as string[];
  const key = decoded.pop();
  if (key === undefined) return undefined;
  return { namespace: decoded, key };
}
