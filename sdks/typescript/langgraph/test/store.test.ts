import assert from "node:assert/strict";
import { test } from "node:test";

import type { GetOperation, PutOperation, SearchOperation } from "@langchain/langgraph-checkpoint";
import { WspClient } from "@wsp/client";
import { WspStore, WspStoreItemError } from "@wsp/langgraph";

import { env, freshRoot } from "./env.js";

const client = new WspClient({ baseUrl: env.url, apiKey: env.key });

function store(root = freshRoot("store")): WspStore {
  return new WspStore({ client, root });
}

test("put, get and delete an item; the value is a versioned JSON file", async () => {
  const s = store();
  assert.equal(await s.get(["users", "u-1"], "prefs"), null);
  await s.put(["users", "u-1"], "prefs", { theme: "dark" });
  const first = await s.get(["users", "u-1"], "prefs");
  assert.ok(first);
  assert.deepEqual(first.value, { theme: "dark" });
  assert.deepEqual(first.namespace, ["users", "u-1"]);
  assert.equal(first.key, "prefs");
  await s.put(["users", "u-1"], "prefs", { theme: "light" });
  const second = await s.get(["users", "u-1"], "prefs");
  assert.ok(second);
  assert.deepEqual(second.value, { theme: "light" });
  assert.equal(second.createdAt.getTime(), first.createdAt.getTime(), "createdAt changed on update");
  assert.ok(second.updatedAt.getTime() >= first.updatedAt.getTime());
  const file = await client.get(s.pathOf(["users", "u-1"], "prefs"));
  assert.equal(file.contentType, "application/json");
  assert.equal(file.version, 2);
  const history = await client.history(file.path);
  assert.deepEqual(history.map((h) => h.version), [2, 1]);
  await s.delete(["users", "u-1"], "prefs");
  assert.equal(await s.get(["users", "u-1"], "prefs"), null);
  await s.delete(["users", "u-1"], "prefs");
});

test("keys and labels of any characters round-trip through the workspace", async () => {
  const s = store();
  // LangGraph refuses labels with a period; every other character goes.
  const namespace = ["tenant é", "a/b", "_2F", "日本"];
  for (const key of ["", ".", "x.json", "with space", "🦀"]) {
    await s.put(namespace, key, { key });
    const item = await s.get(namespace, key);
    assert.deepEqual(item?.value, { key });
  }
  const found = await s.search(namespace, { limit: 10 });
  assert.equal(found.length, 5);
  assert.deepEqual(found.map((i) => i.key).sort(), ["", ".", "with space", "x.json", "🦀"].sort());
});

test("search: namespace prefix, newest first, filter, offset and limit", async () => {
  const s = store();
  await s.put(["docs", "a"], "1", { kind: "report", score: 3 });
  await s.put(["docs", "a"], "2", { kind: "note", score: 5 });
  await s.put(["docs", "b", "deep"], "3", { kind: "report", score: 9 });
  await s.put(["other"], "4", { kind: "report", score: 1 });
  const all = await s.search(["docs"]);
  assert.deepEqual(all.map((i) => i.key).sort(), ["1", "2", "3"]);
  assert.deepEqual(
    all.map((i) => i.updatedAt.getTime()),
    [...all.map((i) => i.updatedAt.getTime())].sort((x, y) => y - x),
  );
  const reports = await s.search(["docs"], { filter: { kind: "report" } });
  assert.deepEqual(reports.map((i) => i.key).sort(), ["1", "3"]);
  const high = await s.search(["docs"], { filter: { score: { $gte: 5 } } });
  assert.deepEqual(high.map((i) => i.key).sort(), ["2", "3"]);
  const inSet = await s.search([], { filter: { score: { $in: [1, 9] } } });
  assert.deepEqual(inSet.map((i) => i.key).sort(), ["3", "4"]);
  const page = await s.search(["docs"], { limit: 2, offset: 1 });
  assert.equal(page.length, 2);
  assert.deepEqual(page.map((i) => i.key), all.slice(1, 3).map((i) => i.key));
  assert.deepEqual((await s.search(["docs", "a"])).map((i) => i.key).sort(), ["1", "2"]);
});

test("search with a query ranks by wsp's word search", async () => {
  const s = store();
  const word = `platypus${Math.floor(Math.random() * 1e9)}`;
  await s.put(["notes"], "hit", { text: `the ${word} swims` });
  await s.put(["notes"], "miss", { text: "nothing to see" });
  const found = await s.search(["notes"], { query: word });
  assert.deepEqual(found.map((i) => i.key), ["hit"]);
  assert.ok((found[0]?.score ?? 0) >= 100);
});

test("listNamespaces: prefix and suffix conditions with wildcards, maxDepth, paging", async () => {
  const s = store();
  await s.put(["a", "x", "1"], "k", { v: 1 });
  await s.put(["a", "y", "1"], "k", { v: 1 });
  await s.put(["a", "y", "2"], "k", { v: 1 });
  await s.put(["b"], "k", { v: 1 });
  assert.deepEqual(await s.listNamespaces(), [["a", "x", "1"], ["a", "y", "1"], ["a", "y", "2"], ["b"]]);
  assert.deepEqual(await s.listNamespaces({ prefix: ["a", "y"] }), [["a", "y", "1"], ["a", "y", "2"]]);
  assert.deepEqual(await s.listNamespaces({ suffix: ["1"] }), [["a", "x", "1"], ["a", "y", "1"]]);
  assert.deepEqual(await s.listNamespaces({ prefix: ["a", "*", "2"] }), [["a", "y", "2"]]);
  assert.deepEqual(await s.listNamespaces({ maxDepth: 2 }), [["a", "x"], ["a", "y"], ["b"]]);
  assert.deepEqual(await s.listNamespaces({ limit: 2, offset: 1 }), [["a", "y", "1"], ["a", "y", "2"]]);
});

test("a batch: reads see the store before its puts; the last put of a key wins", async () => {
  const s = store();
  await s.put(["n"], "k", { v: 0 });
  const [before, , , after] = await s.batch<[GetOperation, PutOperation, PutOperation, SearchOperation]>([
    { namespace: ["n"], key: "k" },
    { namespace: ["n"], key: "k", value: { v: 1 } },
    { namespace: ["n"], key: "k", value: { v: 2 } },
    { namespacePrefix: ["n"], limit: 10, offset: 0 },
  ]);
  assert.deepEqual(before?.value, { v: 0 });
  assert.deepEqual(after?.[0]?.value, { v: 0 });
  assert.deepEqual((await s.get(["n"], "k"))?.value, { v: 2 });
});

test("a put racing another writer reads again and keeps the first createdAt", async () => {
  const root = freshRoot("race");
  const rival = new WspStore({ client, root });
  let conflicts = 0;
  let raced = false;
  const racing = new WspStore({
    root,
    baseUrl: env.url,
    apiKey: env.key,
    fetch: async (input, init) => {
      if (init?.method === "PUT" && !raced) {
        raced = true;
        // Another writer creates the item between this put's read and its conditional write.
        await rival.put(["r"], "k", { by: "rival" });
      }
      const response = await fetch(input, init);
      if (response.status === 409) conflicts += 1;
      return response;
    },
  });
  await racing.put(["r"], "k", { by: "racing" });
  assert.equal(conflicts, 1, "the put did not meet the rival's write");
  const item = await racing.get(["r"], "k");
  assert.deepEqual(item?.value, { by: "racing" });
  const file = await client.get(racing.pathOf(["r"], "k"));
  assert.equal(file.version, 2, "the rival's version was overwritten without being read");
});

test("the items of one owner are invisible to another", async () => {
  const root = freshRoot("owners");
  await new WspStore({ client, root }).put(["private"], "k", { secret: 1 });
  const stranger = new WspStore({ baseUrl: env.url, apiKey: env.otherKey, root });
  assert.equal(await stranger.get(["private"], "k"), null);
  assert.deepEqual(await stranger.search(["private"]), []);
  assert.deepEqual(await stranger.listNamespaces(), []);
});

test("a file under the root that is not an item: ignored by name, refused by content", async () => {
  const s = store();
  await client.put(`${s.root}/y/README.md`, "# not an item");
  await s.put(["y"], "fine", { ok: true });
  assert.deepEqual((await s.search(["y"])).map((i) => i.key), ["fine"]);
  assert.deepEqual(await s.listNamespaces(), [["y"]]);
  await client.put(s.pathOf(["x"], "broken"), "not json");
  await assert.rejects(s.get(["x"], "broken"), WspStoreItemError);
  await assert.rejects(s.search(["x"], { filter: { ok: true } }), WspStoreItemError);
});
