// Real Deep Agents (createDeepAgent) with scripted fake models, their framework's own file
// tools (ls, read_file, write_file, edit_file, glob, grep) running on WspBackend against a real
// wsp serve: two agents edit one file at the same moment and both edits land; an agent that
// writes a file it has not read is told so, reads it, and then writes.

import assert from "node:assert/strict";
import { test } from "node:test";

import { AIMessage, HumanMessage, ToolMessage, type BaseMessage } from "@langchain/core/messages";
import { fakeModel } from "@langchain/core/testing";
import { WspClient } from "@wsp/client";
import { WspBackend } from "@wsp/deepagents";
import { createDeepAgent } from "deepagents";

import { env, freshRoot } from "./env.js";

function toolMessages(messages: BaseMessage[]): ToolMessage[] {
  return messages.filter((m): m is ToolMessage => ToolMessage.isInstance(m));
}

const PLAN = "# Plan\n\n- [ ] design\n- [ ] tests\n- [ ] docs\n";

test("two agents edit one file at the same moment; both edits land", { timeout: 120_000 }, async () => {
  const root = freshRoot("two-agents");
  const path = `${root}/shared/plan.md`;
  const client = new WspClient({ baseUrl: env.url, apiKey: env.key });
  await client.put(path, PLAN);

  // Both agents' conditional writes of the plan wait until both have read it: they race.
  const held: Array<() => void> = [];
  const statuses: number[] = [];
  const racing: typeof fetch = async (input, init) => {
    const target = String(input).endsWith(encodeURIComponent(path));
    if (target && init?.method === "PUT" && statuses.length + held.length < 2) {
      await new Promise<void>((resolve) => {
        held.push(resolve);
        if (held.length === 2) for (const release of held) release();
      });
    }
    const response = await fetch(input, init);
    if (target && init?.method === "PUT") statuses.push(response.status);
    return response;
  };

  const agent = (item: string) =>
    createDeepAgent({
      model: fakeModel()
        .respondWithTools([{ name: "ls", args: { path: "/shared" } }])
        .respondWithTools([{ name: "read_file", args: { file_path: "/shared/plan.md" } }])
        .respondWithTools([
          { name: "edit_file", args: { file_path: "/shared/plan.md", old_string: `- [ ] ${item}`, new_string: `- [x] ${item}` } },
        ])
        .respond(new AIMessage(`${item} is done`)),
      backend: new WspBackend({ baseUrl: env.url, apiKey: env.key, root: `${root}/`, fetch: racing }),
    });

  const [design, tests] = await Promise.all([
    agent("design").invoke({ messages: [new HumanMessage("Tick off design.")] }),
    agent("tests").invoke({ messages: [new HumanMessage("Tick off tests.")] }),
  ]);

  for (const result of [design, tests]) {
    const [ls, read, edit] = toolMessages(result.messages);
    assert.match(String(ls?.content), /\/shared\/plan\.md/);
    assert.match(JSON.stringify(read?.content), /- \[ \] design/);
    assert.match(String(edit?.content), /Successfully replaced 1/);
  }
  assert.deepEqual([...statuses].sort(), [200, 200, 409], "the two edits did not race");
  const final = await client.get(path);
  assert.ok(!final.binary);
  assert.equal(final.text, "# Plan\n\n- [x] design\n- [x] tests\n- [ ] docs\n");
  assert.equal(final.version, 3);
});

test("an agent that writes a file it has not read is told to read it, and then writes", { timeout: 120_000 }, async () => {
  const root = freshRoot("blind-write");
  const client = new WspClient({ baseUrl: env.url, apiKey: env.key });
  await client.put(`${root}/notes.md`, "someone else's notes\n");
  const model = fakeModel()
    .respondWithTools([{ name: "glob", args: { pattern: "*.md" } }])
    .respondWithTools([{ name: "write_file", args: { file_path: "/notes.md", content: "mine\n" } }])
    .respondWithTools([{ name: "read_file", args: { file_path: "/notes.md" } }])
    .respondWithTools([{ name: "grep", args: { pattern: "someone" } }])
    .respondWithTools([
      { name: "write_file", args: { file_path: "/notes.md", content: "someone else's notes\nmine\n" } },
    ])
    .respond(new AIMessage("kept both"));
  const agent = createDeepAgent({ model, backend: new WspBackend({ client, root: `${root}/` }) });
  const result = await agent.invoke({ messages: [new HumanMessage("Add my line to the notes.")] });
  const [glob, refused, read, grep, written] = toolMessages(result.messages);
  assert.match(String(glob?.content), /\/notes\.md/);
  assert.match(String(refused?.content), /already exists and you have not read it/);
  assert.match(JSON.stringify(read?.content), /someone else's notes/);
  assert.match(String(grep?.content), /\/notes\.md/);
  assert.match(String(written?.content), /Updated file \/notes\.md|notes\.md/);
  const final = await client.get(`${root}/notes.md`);
  assert.ok(!final.binary);
  assert.equal(final.text, "someone else's notes\nmine\n");
  assert.equal(final.version, 2);
});
