/**
 * What the tests need from the `wsp serve` they run against, from the environment that
 * `cargo xtask sdks` sets: `WSP_URL`, `WSP_KEY` (every scope), `WSP_KEY_READONLY`
 * (`workspace:read` only) and `WSP_KEY_OTHER` (a key of another tenant). A missing variable
 * fails the test run with one line saying what to set; nothing is skipped.
 */

import { randomBytes } from "node:crypto";

function required(name: string): string {
  const value = process.env[name];
  if (!value) {
    throw new Error(`${name} is not set: run these tests through \`cargo xtask sdks\`, or set WSP_URL, WSP_KEY, WSP_KEY_READONLY and WSP_KEY_OTHER for a running wsp serve`);
  }
  return value;
}

/** The server and its keys. */
export const env = {
  url: required("WSP_URL"),
  key: required("WSP_KEY"),
  readonlyKey: required("WSP_KEY_READONLY"),
  otherKey: required("WSP_KEY_OTHER"),
};

/** A fresh path prefix, so that tests never see each other's files. */
export function freshRoot(name: string): string {
  return `sdk-ts/${name}-${randomBytes(4).toString("hex")}`;
}
