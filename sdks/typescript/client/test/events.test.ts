import assert from "node:assert/strict";
import { test } from "node:test";

import { WspClient, type WorkspaceEvent } from "@wsp/client";

import { env, freshRoot } from "./env.js";

const wsp = new WspClient({ baseUrl: env.url, apiKey: env.key });

/** The feed position now: a new run's `eventsUrl` is positioned at its snapshot. */
async function position(): Promise<number> {
  const run = await wsp.createRun("sdk-ts-events");
  await wsp.cancelRun(run.runId);
  const since = new URL(run.eventsUrl, env.url).searchParams.get("since");
  assert.ok(since !== null, `no since in ${run.eventsUrl}`);
  return Number(since);
}

/** The next `count` events of `iterator` under `root` (other tests write to the same owner). */
async function take(iterator: AsyncIterator<WorkspaceEvent>, root: string, count: number): Promise<WorkspaceEvent[]> {
  const events: WorkspaceEvent[] = [];
  while (events.length < count) {
    const next = await iterator.next();
    assert.ok(!next.done, "the feed ended");
    if (next.value.payload.path.startsWith(root)) events.push(next.value);
  }
  return events;
}

test("the feed yields each event as it arrives, while the stream stays open", { timeout: 60_000 }, async () => {
  const root = freshRoot("feed");
  const since = await position();
  const feed = wsp.events({ since });
  await wsp.put(`${root}/a.md`, "a");
  const [first] = await take(feed, root, 1);
  assert.equal(first?.type, "workspace.updated");
  assert.equal(first?.payload.path, `${root}/a.md`);
  assert.equal(first?.payload.version, 1);
  // Written only after the first event was read: the stream is still open and delivers it.
  const written = await wsp.put(`${root}/a.md`, "b");
  await wsp.delete(`${root}/a.md`, { ifMatch: written.etag });
  const [second, third] = await take(feed, root, 2);
  assert.equal(second?.payload.version, 2);
  assert.equal(third?.payload.deleted, true);
  assert.ok((first?.sequence ?? 0) < (second?.sequence ?? 0));
  await feed.return(undefined);
});

test("leaving the loop closes the stream; a new iterator resumes after the last event", { timeout: 60_000 }, async () => {
  const root = freshRoot("resume");
  const since = await position();
  for (const name of ["1", "2", "3"]) await wsp.put(`${root}/${name}.md`, name);
  let last = since;
  for await (const event of wsp.events({ since })) {
    last = event.sequence;
    if (event.payload.path === `${root}/1.md`) break;
  }
  const resumed = wsp.events({ since: last });
  const rest = await take(resumed, root, 2);
  await resumed.return(undefined);
  assert.deepEqual(rest.map((e) => e.payload.path), [`${root}/2.md`, `${root}/3.md`]);
});

test("a broken stream reconnects with Last-Event-ID and loses and repeats nothing", { timeout: 60_000 }, async () => {
  const root = freshRoot("reconnect");
  const since = await position();
  const lastEventIds: (string | null)[] = [];
  let connections = 0;
  // The first connection's body breaks right after its first event.
  const flaky: typeof fetch = async (input, init) => {
    const response = await fetch(input, init);
    if (!String(input).includes("/events")) return response;
    lastEventIds.push(new Headers(init?.headers).get("Last-Event-ID"));
    connections += 1;
    if (connections > 1 || response.body === null) return response;
    const reader = response.body.getReader();
    let seen = "";
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        const { value, done } = await reader.read();
        if (done) return controller.close();
        seen += new TextDecoder().decode(value);
        const end = seen.indexOf("\n\n", seen.indexOf("data:"));
        if (seen.includes("data:") && end >= 0) {
          // Deliver exactly the first event, then reset the connection.
          controller.enqueue(new TextEncoder().encode(seen.slice(0, end + 2)));
          await reader.cancel();
          controller.error(new TypeError("terminated"));
          return;
        }
        // Nothing delivered until the first event is whole (the text so far is kept in `seen`).
      },
    });
    return new Response(body, { status: response.status, headers: response.headers });
  };
  const client = new WspClient({ baseUrl: env.url, apiKey: env.key, fetch: flaky });
  for (const name of ["1", "2", "3"]) await wsp.put(`${root}/${name}.md`, name);
  const feed = client.events({ since, reconnectDelayMs: 10 });
  const events = await take(feed, root, 3);
  await feed.return(undefined);
  assert.deepEqual(events.map((e) => e.payload.path), [`${root}/1.md`, `${root}/2.md`, `${root}/3.md`]);
  const sequences = events.map((e) => e.sequence);
  assert.deepEqual(sequences, [...new Set(sequences)].sort((a, b) => a - b));
  assert.ok(connections >= 2, "the client did not reconnect");
  assert.equal(lastEventIds[0], String(since));
  assert.ok(Number(lastEventIds[1]) > since, `resumed at ${lastEventIds[1]}`);
});

test("aborting the signal ends the iteration without an error", { timeout: 60_000 }, async () => {
  const abort = new AbortController();
  const feed = wsp.events({ signal: abort.signal });
  const next = feed.next();
  setTimeout(() => abort.abort(), 50);
  const result = await next;
  assert.equal(result.done, true);
});

test("a refused position is a typed error, not a hang", { timeout: 60_000 }, async () => {
  const reader = new WspClient({ baseUrl: env.url, apiKey: "wsp_000000000000_not-a-key" });
  await assert.rejects(reader.events({ since: 0 }).next(), /unauthenticated/);
});
