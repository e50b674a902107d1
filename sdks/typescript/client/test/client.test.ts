import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import {
  WspAuthenticationError,
  WspClient,
  WspConflictError,
  WspNotFoundError,
  WspPathError,
  WspPermissionError,
  fileBytes,
  type WspFile,
} from "@wsp/client";

import { env, freshRoot } from "./env.js";

const wsp = new WspClient({ baseUrl: env.url, apiKey: env.key });

function textOf(file: WspFile | null): string {
  assert.ok(file, "no file");
  assert.equal(file.binary, false, `${file.path} is binary`);
  return file.text;
}

test("discovery names the protocol and the workspace capability", async () => {
  const doc = await wsp.discovery();
  assert.ok(doc.protocolVersion);
  assert.ok(doc.workspace, "no workspace capability");
});

test("put creates with If-None-Match: *, and a second create is a typed conflict", async () => {
  const path = `${freshRoot("create")}/plan.md`;
  const first = await wsp.put(path, "# Plan\n", { ifNoneMatch: "*" });
  assert.equal(first.version, 1);
  assert.equal(first.contentType, "text/markdown");
  assert.match(first.etag, /^".+"$/);
  assert.equal(textOf(first), "# Plan\n");
  await assert.rejects(wsp.put(path, "again", { ifNoneMatch: "*" }), (err: unknown) => {
    assert.ok(err instanceof WspConflictError, String(err));
    assert.equal(err.status, 409);
    assert.equal(err.code, "workspace_conflict");
    assert.equal(err.currentVersion, 1);
    return true;
  });
  assert.equal(textOf(await wsp.get(path)), "# Plan\n", "the refused write changed the file");
});

test("If-Match: a fresh etag writes, a stale one is refused and loses nothing", async () => {
  const path = `${freshRoot("ifmatch")}/notes.md`;
  const v1 = await wsp.put(path, "one");
  const v2 = await wsp.put(path, "two", { ifMatch: v1.etag, contentType: "text/plain" });
  assert.equal(v2.version, 2);
  assert.equal(v2.contentType, "text/plain");
  await assert.rejects(wsp.put(path, "three", { ifMatch: v1.etag }), WspConflictError);
  await assert.rejects(wsp.delete(path, { ifMatch: v1.etag }), WspConflictError);
  assert.equal(textOf(await wsp.get(path)), "two");
  assert.equal(textOf(await wsp.get(path, { version: 1 })), "one");
  const history = await wsp.history(path);
  assert.deepEqual(history.map((h) => h.version), [2, 1]);
  assert.equal(history[0]?.etag, v2.etag);
  await wsp.delete(path, { ifMatch: v2.etag });
  assert.equal(await wsp.find(path), null);
  await assert.rejects(wsp.get(path), WspNotFoundError);
});

test("list answers the files under a prefix, sorted, with etag and size", async () => {
  const root = freshRoot("list");
  await wsp.put(`${root}/b.md`, "bb");
  await wsp.put(`${root}/a.md`, "a");
  await wsp.put(`${root}-sibling.md`, "not under the folder");
  const files = await wsp.list({ prefix: `${root}/` });
  assert.deepEqual(files.map((f) => f.path), [`${root}/a.md`, `${root}/b.md`]);
  assert.deepEqual(files.map((f) => f.size), [1, 2]);
  for (const f of files) assert.match(f.etag, /^".+"$/);
});

test("bytes round-trip as Uint8Array (contentEncoding base64), every byte value", async () => {
  const path = `${freshRoot("bytes")}/blob.bin`;
  const bytes = new Uint8Array(512);
  for (let i = 0; i < bytes.length; i += 1) bytes[i] = (i * 7) % 256;
  const written = await wsp.put(path, bytes, { contentType: "application/octet-stream" });
  assert.equal(written.binary, true);
  const read = await wsp.get(path);
  assert.ok(read.binary, "read back as text");
  assert.deepEqual(read.bytes, bytes);
  assert.deepEqual(fileBytes(read), bytes);
  const [listed] = await wsp.list({ prefix: path });
  assert.equal(listed?.binary, true);
  assert.equal(listed?.size, 512);
});

test("update re-reads and re-applies its change when another writer got there first", async () => {
  const path = `${freshRoot("rmw")}/log.md`;
  await wsp.put(path, "start\n");
  const other = new WspClient({ baseUrl: env.url, apiKey: env.key });
  let calls = 0;
  const result = await wsp.update(path, async (current) => {
    calls += 1;
    if (calls === 1) {
      // Another writer commits between this read and the conditional write.
      await other.update(path, (f) => `${textOf(f)}other\n`);
    }
    return `${textOf(current)}mine\n`;
  });
  assert.equal(calls, 2, "the change was not re-applied after the conflict");
  assert.equal(textOf(result), "start\nother\nmine\n");
  assert.equal(result?.version, 3);
});

test("update: eight concurrent writers each append a line, none is lost", async () => {
  const path = `${freshRoot("rmw8")}/counter.md`;
  const writers = Array.from({ length: 8 }, (_, i) =>
    new WspClient({ baseUrl: env.url, apiKey: env.key }).update(path, (f) => `${f === null ? "" : textOf(f)}line ${i}\n`),
  );
  await Promise.all(writers);
  const lines = textOf(await wsp.get(path)).trim().split("\n").sort();
  assert.deepEqual(lines, Array.from({ length: 8 }, (_, i) => `line ${i}`));
});

test("update gives up with the last conflict after maxAttempts", async () => {
  const path = `${freshRoot("rmw-give-up")}/hot.md`;
  await wsp.put(path, "0");
  const other = new WspClient({ baseUrl: env.url, apiKey: env.key });
  let calls = 0;
  await assert.rejects(
    wsp.update(
      path,
      async (f) => {
        calls += 1;
        await other.put(path, `${textOf(f)}+`);
        return "never written";
      },
      { maxAttempts: 3 },
    ),
    WspConflictError,
  );
  assert.equal(calls, 3);
  assert.equal(textOf(await wsp.get(path)), "0+++");
});

test("errors are typed values with the envelope's code, message and details", async () => {
  const stranger = new WspClient({ baseUrl: env.url, apiKey: "wsp_000000000000_not-a-key" });
  await assert.rejects(stranger.list(), (err: unknown) => {
    assert.ok(err instanceof WspAuthenticationError, String(err));
    assert.equal(err.code, "unauthenticated");
    assert.ok(err.envelope.message);
    return true;
  });
  const reader = new WspClient({ baseUrl: env.url, apiKey: env.readonlyKey });
  await assert.rejects(reader.put(`${freshRoot("ro")}/x.md`, "x"), (err: unknown) => {
    assert.ok(err instanceof WspPermissionError, String(err));
    assert.equal(err.details["requiredScope"], "workspace:write");
    return true;
  });
  let sent = false;
  const counting = new WspClient({
    baseUrl: env.url,
    apiKey: env.key,
    fetch: (input, init) => {
      sent = true;
      return fetch(input, init);
    },
  });
  for (const bad of ["../etc/passwd", "a/../b", "/abs.md", "a//b", "a/./b", "", "sp ace.md", "x".repeat(257)]) {
    await assert.rejects(counting.get(bad), WspPathError, bad);
  }
  assert.equal(sent, false, "a refused path reached the network");
});

test("keys of two tenants see two workspaces", async () => {
  const path = `${freshRoot("tenants")}/private.md`;
  await wsp.put(path, "mine");
  const other = new WspClient({ baseUrl: env.url, apiKey: env.otherKey });
  assert.equal(await other.find(path), null);
});

test("runs: a snapshot read sees the version of the run's start", async () => {
  const path = `${freshRoot("runs")}/AGENTS.md`;
  await wsp.put(path, "before");
  const run = await wsp.createRun("sdk-ts-test", { inputs: { n: 1 } });
  assert.equal(run.status, "running");
  await wsp.put(path, "after");
  assert.equal(textOf(await wsp.getRunFile(run.runId, path)), "before");
  assert.equal(textOf(await wsp.get(path)), "after");
  const listed = await wsp.listRunFiles(run.runId, { prefix: path });
  assert.deepEqual(listed.map((f) => [f.path, f.version]), [[path, 1]]);
  const seen = await wsp.getRun(run.runId);
  assert.ok(seen.workspace.some((e) => e.path === path && e.version === 1));
  const context = await wsp.runContext(run.runId, { budget: 2000 });
  assert.ok(context.report.usedTokens <= 2000);
  const page = await wsp.listRuns({ limit: 50 });
  assert.ok(page.runs.some((r) => r.runId === run.runId));
  const cancelled = await wsp.cancelRun(run.runId);
  assert.equal(cancelled.status, "cancelled");
});

test("context as JSON and as text", async () => {
  const context = await wsp.context({ budget: 1500, session: "s-1" });
  assert.equal(typeof context.text, "string");
  assert.ok(context.report.usedTokens <= 1500);
  const text = await wsp.contextText({ budget: 1500, session: "s-1" });
  assert.match(text, /## Session Context/);
});

test("appendMemory, then search finds the line", async () => {
  const word = `quokka${Math.floor(Math.random() * 1e9)}`;
  const appended = await wsp.appendMemory(`Remember the ${word}.`);
  assert.match(appended.path, /^memory\/\d{4}-\d{2}-\d{2}\.md$/);
  const found = await wsp.search(word, { prefix: "memory/" });
  assert.ok(found.matches.some((m) => m.path === appended.path && m.snippet.includes(word)));
});

test("agents: the inventory, and an unknown agent is not found", async () => {
  const inventory = await wsp.agents();
  assert.ok(Array.isArray(inventory.agents));
  await assert.rejects(wsp.agent("no.such.agent"), WspNotFoundError);
});

test("the shared path vectors: refused ones never leave the client, accepted ones are written", async () => {
  const vectors = JSON.parse(readFileSync(env.pathVectors, "utf-8")) as {
    http_path: { path: string; expect: number }[];
  };
  let sent = 0;
  const counting = new WspClient({
    baseUrl: env.url,
    apiKey: env.key,
    fetch: (input, init) => {
      sent += 1;
      return fetch(input, init);
    },
  });
  for (const vector of vectors.http_path) {
    const path = vector.path === "LONG_257_CHARS" ? "a".repeat(257) : decodeURIComponent(vector.path);
    if (vector.expect === 400) {
      const before = sent;
      await assert.rejects(counting.put(path, "x"), WspPathError, vector.path);
      assert.equal(sent, before, `${vector.path} reached the network`);
    } else {
      const written = await counting.put(path, "x");
      assert.equal(written.path, path);
    }
  }
});
