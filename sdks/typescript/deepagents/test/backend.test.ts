import assert from "node:assert/strict";
import { test } from "node:test";

import { WspClient } from "@wsp/client";
import { WspBackend } from "@wsp/deepagents";

import { env, freshRoot } from "./env.js";

const client = new WspClient({ baseUrl: env.url, apiKey: env.key });

function backend(root: string): WspBackend {
  return new WspBackend({ client, root: `${root}/` });
}

test("write creates, read pages by lines, ls shows files and folders", async () => {
  const b = backend(freshRoot("basics"));
  assert.deepEqual(await b.write("/notes/plan.md", "one\ntwo\nthree\n"), { path: "/notes/plan.md", filesUpdate: null });
  await b.write("/notes/deep/x.txt", "x");
  await b.write("/top.md", "top");
  const page = await b.read("/notes/plan.md", 1, 1);
  assert.deepEqual(page, { content: "two", mimeType: "text/markdown", totalLines: 3, startLine: 2, endLine: 2, nextOffset: 2 });
  assert.equal((await b.read("/notes/plan.md")).content, "one\ntwo\nthree\n".split("\n").slice(0, 4).join("\n"));
  const ls = await b.ls("/");
  assert.deepEqual(ls.files?.map((f) => [f.path, f.is_dir]), [["/notes/", true], ["/top.md", false]]);
  const inner = await b.ls("/notes");
  assert.deepEqual(inner.files?.map((f) => f.path), ["/notes/deep/", "/notes/plan.md"]);
  assert.equal(inner.files?.[1]?.size, 14);
  assert.match((await b.read("/missing.md")).error ?? "", /not found/);
  assert.match((await b.read("/../etc/passwd")).error ?? "", /invalid path/);
});

test("write replaces only the version this backend has seen; another agent's change is never overwritten", async () => {
  const root = freshRoot("write");
  const mine = backend(root);
  const theirs = backend(root);
  await mine.write("/shared.md", "v1");
  // The other agent never read the file: it may not replace it.
  assert.match((await theirs.write("/shared.md", "blind")).error ?? "", /already exists and you have not read it/);
  assert.equal((await theirs.read("/shared.md")).content, "v1");
  assert.equal((await theirs.write("/shared.md", "v2 by theirs")).error, undefined);
  // This backend last saw v1: its write would lose theirs.
  assert.match((await mine.write("/shared.md", "v2 by mine")).error ?? "", /changed by someone else/);
  assert.equal((await client.get(`${root}/shared.md`)).binary === false && (await client.get(`${root}/shared.md`)).version, 2);
  await mine.read("/shared.md");
  assert.equal((await mine.write("/shared.md", "v3 by mine")).error, undefined);
  const history = await client.history(`${root}/shared.md`);
  assert.deepEqual(history.map((h) => h.version), [3, 2, 1]);
});

test("edit replaces a unique string, refuses ambiguity, and reports what it did", async () => {
  const b = backend(freshRoot("edit"));
  await b.write("/f.md", "a b a");
  assert.match((await b.edit("/f.md", "a", "z")).error ?? "", /multiple occurrences/);
  assert.match((await b.edit("/f.md", "q", "z")).error ?? "", /not found/);
  assert.deepEqual(await b.edit("/f.md", "b", "B"), { path: "/f.md", filesUpdate: null, occurrences: 1 });
  assert.equal((await b.edit("/f.md", "a", "A", true)).occurrences, 2);
  assert.equal((await b.read("/f.md")).content, "A B A");
});

test("glob and grep over the workspace", async () => {
  const b = backend(freshRoot("search"));
  await b.write("/src/a.py", "import os\nprint('TODO one')\n");
  await b.write("/src/lib/b.py", "# TODO two\n");
  await b.write("/docs/c.md", "TODO three\n");
  const py = await b.glob("**/*.py");
  assert.deepEqual(py.files?.map((f) => f.path).sort(), ["/src/a.py", "/src/lib/b.py"]);
  assert.deepEqual((await b.glob("*.md", "/docs")).files?.map((f) => f.path), ["/docs/c.md"]);
  const all = await b.grep("TODO");
  assert.deepEqual(all.matches?.map((m) => [m.path, m.line]), [["/docs/c.md", 1], ["/src/a.py", 2], ["/src/lib/b.py", 1]]);
  const onlyPy = await b.grep("TODO", "/src", "*.py");
  assert.equal(onlyPy.matches?.length, 2);
  const capped = await b.grep("TODO", "/", null, 1);
  assert.equal(capped.matches?.length, 1);
  assert.equal(capped.truncated, true);
  const exact = await b.grep("TODO", "/src/a.py");
  assert.deepEqual(exact.matches?.map((m) => m.path), ["/src/a.py"]);
});

test("binary files: a write of base64 to a .png stores bytes; read answers them", async () => {
  const root = freshRoot("binary");
  const b = backend(root);
  const bytes = new Uint8Array([137, 80, 78, 71, 13, 10, 26, 10, 0, 255]);
  assert.equal((await b.write("/img/logo.png", Buffer.from(bytes).toString("base64"))).error, undefined);
  const stored = await client.get(`${root}/img/logo.png`);
  assert.ok(stored.binary);
  assert.deepEqual(stored.bytes, bytes);
  assert.equal(stored.contentType, "image/png");
  const read = await b.read("/img/logo.png");
  assert.deepEqual(read.content, bytes);
  const [down] = await b.downloadFiles(["/img/logo.png"]);
  assert.deepEqual(down?.content, bytes);
  const [up] = await b.uploadFiles([["/up.txt", new TextEncoder().encode("uploaded")]]);
  assert.equal(up?.error, null);
  assert.equal((await b.read("/up.txt")).content, "uploaded");
});

test("delete removes a file, or a folder and everything under it", async () => {
  const b = backend(freshRoot("delete"));
  await b.write("/d/1.md", "1");
  await b.write("/d/sub/2.md", "2");
  await b.write("/keep.md", "k");
  assert.equal((await b.delete("/d")).error, undefined);
  assert.deepEqual((await b.ls("/")).files?.map((f) => f.path), ["/keep.md"]);
  assert.match((await b.delete("/d")).error ?? "", /not found/);
  assert.equal((await b.delete("/keep.md")).error, undefined);
});
