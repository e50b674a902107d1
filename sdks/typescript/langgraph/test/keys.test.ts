import assert from "node:assert/strict";
import { test } from "node:test";

import { isPath } from "@wsp/client";
import { decodeLabel, encodeLabel, itemPath, parseItemPath } from "@wsp/langgraph";

const LABELS = [
  "",
  "a",
  "users",
  "u-1",
  ".",
  "..",
  ".hidden",
  "a.b",
  "x.json",
  "_",
  "__",
  "_2F",
  "a/b",
  "../../etc/passwd",
  "with space",
  "tab\there",
  "nul\u0000byte",
  "colon:and;semicolon",
  "café",
  "日本語",
  "emoji 🦀",
  "%2F",
  "UPPER lower 0123456789",
];

test("every label encodes to one path component and decodes back", () => {
  for (const label of LABELS) {
    const component = encodeLabel(label);
    assert.ok(isPath(`root/${component}`), `${JSON.stringify(label)} -> ${component}`);
    assert.ok(!component.includes("/"));
    assert.equal(decodeLabel(component), label, component);
  }
});

test("encodings are injective: distinct labels, distinct components", () => {
  const components = LABELS.map(encodeLabel);
  assert.equal(new Set(components).size, LABELS.length);
});

test("items map to paths and back, and only canonical paths are items", () => {
  for (const a of LABELS) {
    for (const key of ["k", "", "x.json", "日本"]) {
      const path = itemPath("store", [a, "tail"], key);
      assert.deepEqual(parseItemPath("store", path), { namespace: [a, "tail"], key }, path);
    }
  }
  assert.equal(itemPath("store", ["users", "u-1"], "prefs"), "store/users/u-1/prefs.json");
  assert.equal(itemPath("store", ["a/b"], "café"), "store/a_2Fb/caf_C3_A9.json");
  for (const foreign of [
    "store/notes.md",
    "other/a/b.json",
    "store/a_2fb/k.json",
    "store/a_2Db/k.json",
    "store/a_G0/k.json",
    "store/a_/k.json",
    "store/_FF/k.json",
    "store/.x/k.json",
  ]) {
    assert.equal(parseItemPath("store", foreign), undefined, foreign);
  }
});

test("a namespace too long for a path is refused, never shortened", () => {
  assert.throws(() => itemPath("store", ["x".repeat(300)], "k"), /longer than 256/);
});
