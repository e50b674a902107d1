// A real LangChain agent (createAgent) whose tools read and write long-term memory through
// LangGraph's store API, with WspStore as the store and a scripted fake chat model: it lists,
// writes, reads, meets a concurrent writer, and recovers.

import assert from "node:assert/strict";
import { test } from "node:test";

import { AIMessage, HumanMessage, ToolMessage } from "@langchain/core/messages";
import { fakeModel } from "@langchain/core/testing";
import { getStore } from "@langchain/langgraph";
import { WspClient } from "@wsp/client";
import { WspStore } from "@wsp/langgraph";
import { createAgent, tool } from "langchain";
import { z } from "zod";

import { env, freshRoot } from "./env.js";

const NAMESPACE = ["memories", "user-1"];

function store(): NonNullable<ReturnType<typeof getStore>> {
  const s = getStore();
  assert.ok(s, "the agent's tools see no store");
  return s;
}

const listMemories = tool(
  async () => {
    const items = await store().search(NAMESPACE);
    return JSON.stringify(items.map((i) => ({ key: i.key, value: i.value })));
  },
  { name: "list_memories", description: "List the user's memories.", schema: z.object({}) },
);

const remember = tool(
  async ({ key, text }) => {
    await store().put(NAMESPACE, key, { text });
    return `remembered ${key}`;
  },
  {
    name: "remember",
    description: "Remember a fact about the user.",
    schema: z.object({ key: z.string(), text: z.string() }),
  },
);

const recall = tool(
  async ({ key }) => {
    const item = await store().get(NAMESPACE, key);
    return item === null ? "nothing" : String(item.value["text"]);
  },
  { name: "recall", description: "Recall one memory.", schema: z.object({ key: z.string() }) },
);

test("an agent lists, writes and reads memories in wsp, and recovers from a conflicting writer", { timeout: 60_000 }, async () => {
  const root = freshRoot("agent");
  const client = new WspClient({ baseUrl: env.url, apiKey: env.key });
  const rival = new WspStore({ client, root });
  let conflicts = 0;
  let raced = false;
  const wspStore = new WspStore({
    root,
    baseUrl: env.url,
    apiKey: env.key,
    fetch: async (input, init) => {
      if (init?.method === "PUT" && !raced) {
        raced = true;
        // Another process writes the same memory while the agent's put is in flight.
        await rival.put(NAMESPACE, "color", { text: "green" });
      }
      const response = await fetch(input, init);
      if (response.status === 409) conflicts += 1;
      return response;
    },
  });
  await rival.put(NAMESPACE, "pet", { text: "a cat" });

  const model = fakeModel()
    .respondWithTools([{ name: "list_memories", args: {} }])
    .respondWithTools([{ name: "remember", args: { key: "color", text: "blue" } }])
    .respondWithTools([{ name: "recall", args: { key: "color" } }])
    .respond((messages) => {
      const last = messages[messages.length - 1];
      return new AIMessage(`Your favorite color is ${String(last?.content)}.`);
    });
  const agent = createAgent({ model, tools: [listMemories, remember, recall], store: wspStore });
  const result = await agent.invoke({ messages: [new HumanMessage("My favorite color is blue.")] });

  const tools = result.messages.filter((m): m is ToolMessage => ToolMessage.isInstance(m));
  assert.deepEqual(
    tools.map((m) => m.name),
    ["list_memories", "remember", "recall"],
  );
  assert.deepEqual(JSON.parse(String(tools[0]?.content)), [{ key: "pet", value: { text: "a cat" } }]);
  assert.equal(tools[1]?.content, "remembered color");
  assert.equal(tools[2]?.content, "blue");
  assert.equal(result.messages[result.messages.length - 1]?.content, "Your favorite color is blue.");
  assert.equal(conflicts, 1, "the agent's write never met the rival's");
  const file = await client.get(wspStore.pathOf(NAMESPACE, "color"));
  assert.equal(file.version, 2, "the rival's write was lost rather than read and replaced");
});
