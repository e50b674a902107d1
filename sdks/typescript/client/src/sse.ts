/**
 * A Server-Sent Events parser (the WHATWG `text/event-stream` format) that reads a response
 * body as it arrives: each event is handed over as soon as its blank line is read, never after
 * the whole body. The change feed is an endless stream, so a reader that waits for the end of
 * the body (as `response.json()` or `response.text()` do) waits forever.
 *
 * @module
 */

/** One dispatched event. */
export interface ServerSentEvent {
  /** The `event:` field; `message` when the event named none. */
  event: string;
  /** The `data:` lines joined by `\n`. */
  data: string;
  /** The last `id:` field seen on the stream so far (the SSE "last event ID"), if any. */
  id: string | undefined;
  /** The `retry:` field of this event, in milliseconds, if it had one. */
  retry: number | undefined;
}

/**
 * The events of `body`, in order, as they arrive. Ends when the body ends; a partial event at
 * the end (no blank line after it) is dropped, as the format says.
 */
export async function* readEvents(body: ReadableStream<Uint8Array>): AsyncGenerator<ServerSentEvent> {
  const reader = body.getReader();
  const decoder = new TextDecoder("utf-8");
  let buffer = "";
  let lastId: string | undefined;
  let event = "";
  let data: string[] = [];
  let retry: number | undefined;
  let sawData = false;
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += decoder.decode(value, { stream: true });
      // A line ends in CRLF, LF or CR; a CR at the very end may be the first half of a CRLF.
      for (;;) {
        const match = /\r\n|\n|\r/.exec(buffer);
        if (!match) break;
        if (match[0] === "\r" && match.index === buffer.length - 1) break;
        const line = buffer.slice(0, match.index);
        buffer = buffer.slice(match.index + match[0].length);
        if (line === "") {
          if (sawData) {
            yield { event: event || "message", data: data.join("\n"), id: lastId, retry };
          }
          event = "";
          data = [];
          retry = undefined;
          sawData = false;
          continue;
        }
        if (line.startsWith(":")) continue;
        const colon = line.indexOf(":");
        const field = colon < 0 ? line : line.slice(0, colon);
        let value = colon < 0 ? "" : line.slice(colon + 1);
        if (value.startsWith(" ")) value = value.slice(1);
        switch (field) {
          case "event":
            event = value;
            break;
          case "data":
            data.push(value);
            sawData = true;
            break;
          case "id":
            if (!value.includes("\0")) lastId = value;
            break;
          case "retry":
            if (/^[0-9]+$/.test(value)) retry = Number(value);
            break;
          default:
            break;
        }
      }
    }
  } finally {
    // Stops the transfer when the consumer leaves early (break, return, throw).
    await reader.cancel().catch(() => undefined);
    reader.releaseLock();
  }
}
