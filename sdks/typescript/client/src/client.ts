/**
 * {@link WspClient}: every operation of the wsp workspace API, typed by the types generated from
 * its OpenAPI document (`generated/openapi.ts`), with what generation alone does not give:
 * typed errors, a file's `etag` always at hand, binary bodies as `Uint8Array`, read-modify-write
 * that retries on a conflict, and the change feed as an async iterator that resumes.
 *
 * @module
 */

import { fromBase64, toBase64 } from "./base64.js";
import {
  WspConflictError,
  WspConnectionError,
  WspError,
  WspNotFoundError,
  WspResponseError,
  apiError,
  isErrorEnvelope,
} from "./errors.js";
import type { components, operations } from "./generated/openapi.js";
import { checkPath, checkPrefix, pathSegment } from "./paths.js";
import { readEvents } from "./sse.js";

type Schemas = components["schemas"];

/** The discovery document (`GET /.well-known/openwop`). */
export type Discovery = Schemas["Discovery"];
/** A change-feed event (`workspace.updated`). */
export type WorkspaceEvent = Schemas["WorkspaceEvent"];
/** Answer of `POST /v1/runs`. */
export type RunCreated = Schemas["RunCreated"];
/** A run and the snapshot it sees. */
export type Run = Schemas["Run"];
/** A page of runs, newest first. */
export type RunList = Schemas["RunList"];
/** The run-start context and its report. */
export type WorkspaceContext = Schemas["WorkspaceContext"];
/** Answer of a workspace search. */
export type WorkspaceSearchResults = Schemas["WorkspaceSearchResults"];
/** Answer of a memory append. */
export type MemoryAppended = Schemas["MemoryAppended"];
/** The agent inventory. */
export type AgentInventory = Schemas["AgentInventory"];
/** One agent of the inventory. */
export type AgentInventoryEntry = Schemas["AgentInventoryEntry"];
/** Body of a publish. */
export type PublishRequest = Schemas["PublishRequest"];
/** Answer of a publish. */
export type PublishResponse = Schemas["PublishResponse"];

/** Query parameters of the context operations. */
export type ContextOptions = NonNullable<operations["getWorkspaceContext"]["parameters"]["query"]>;

/**
 * A file's metadata as this client hands it out. Unlike the document's `WorkspaceFileMeta`,
 * `etag` and `contentType` are always present: wsp always sends them, and the client fails
 * with {@link WspResponseError} rather than hand out a file that cannot be written back safely.
 */
export interface FileInfo {
  /** The workspace path. */
  path: string;
  /** Version within the file's current life (1 for its first write). */
  version: number;
  /** The version's etag, to send back as `ifMatch`. */
  etag: string;
  /** The media type. */
  contentType: string;
  /** When this version was written (RFC 3339). */
  updatedAt: string;
  /** Who wrote it (the key's principal), when recorded. */
  updatedBy?: string;
  /** Size of the body in bytes (lists and histories only). */
  size?: number;
  /** Whether the file holds bytes (`contentEncoding: base64`) rather than text. */
  binary: boolean;
}

/** A text file and its body. */
export interface TextFile extends FileInfo {
  /** Always `false`. */
  binary: false;
  /** The body. */
  text: string;
}

/** A binary file and its body. */
export interface BinaryFile extends FileInfo {
  /** Always `true`. */
  binary: true;
  /** The body. */
  bytes: Uint8Array;
}

/** A file with its body: text or bytes, told apart by `binary`. */
export type WspFile = TextFile | BinaryFile;

/** A body to write: a string is written as text, a `Uint8Array` as bytes (base64 on the wire). */
export type FileContent = string | Uint8Array;

/** The body of `file` as bytes (UTF-8 for a text file). */
export function fileBytes(file: WspFile): Uint8Array {
  return file.binary ? file.bytes : new TextEncoder().encode(file.text);
}

/** Options of {@link WspClient.put}. */
export interface PutOptions {
  /** The media type; when absent the server uses `text/markdown` (`application/octet-stream` for bytes). */
  contentType?: string;
  /** Write only if the file is still at this etag (else {@link WspConflictError}). */
  ifMatch?: string;
  /** `"*"`: write only if there is no file at the path (else {@link WspConflictError}). */
  ifNoneMatch?: "*";
  /** Replays of a request with the same key answer the first answer. */
  idempotencyKey?: string;
  /** Aborts the request. */
  signal?: AbortSignal;
}

/** Options of {@link WspClient.delete}. */
export interface DeleteOptions {
  /** Delete only if the file is still at this etag (else {@link WspConflictError}). */
  ifMatch?: string;
  /** Replays of a request with the same key answer the first answer. */
  idempotencyKey?: string;
  /** Aborts the request. */
  signal?: AbortSignal;
}

/** Options of {@link WspClient.update}. */
export interface UpdateOptions {
  /** The media type written (default: the current file's, else the server's default). */
  contentType?: string;
  /** How many conditional writes to try before giving up with {@link WspConflictError} (default 10). */
  maxAttempts?: number;
  /** Aborts the requests. */
  signal?: AbortSignal;
}

/** Options of {@link WspClient.events}. */
export interface EventsOptions {
  /** Start after this sequence number (0: from the oldest retained change); default: from now on. */
  since?: number;
  /** Ends the iteration (the iterator returns; nothing is thrown). */
  signal?: AbortSignal;
  /** Reconnect, resuming with `Last-Event-ID`, when the stream ends or breaks (default `true`). */
  reconnect?: boolean;
  /** The first wait before reconnecting, doubled on each failure in a row up to 32 times (default 500 ms). */
  reconnectDelayMs?: number;
  /** Failed reconnections in a row before the iterator throws (default 10). */
  maxReconnects?: number;
}

/** How a {@link WspClient} reaches its server. */
export interface WspClientOptions {
  /** The server's base URL, such as `http://127.0.0.1:8787`. */
  baseUrl: string;
  /** The API key, sent as `Authorization: Bearer <key>`; it decides whose workspace is used. */
  apiKey?: string;
  /** The `fetch` to use (default: the global one); tests and proxies pass their own. */
  fetch?: typeof globalThis.fetch;
  /** Headers sent with every request. */
  headers?: Record<string, string>;
}

interface RequestOptions {
  query?: Record<string, string | number | boolean | undefined>;
  headers?: Record<string, string | undefined>;
  json?: unknown;
  signal?: AbortSignal | undefined;
}

type WireFile = Schemas["WorkspaceFile"];
type WireMeta = Schemas["WorkspaceFileMeta"];

/** The default media type of the wire (`contentType` absent). */
const DEFAULT_CONTENT_TYPE = "text/markdown";

/**
 * A client of one wsp server, acting with one API key (so on one owner's workspace).
 *
 * ```ts
 * const wsp = new WspClient({ baseUrl: "http://127.0.0.1:8787", apiKey: process.env.WSP_KEY });
 * const file = await wsp.put("notes/plan.md", "# Plan\n", { ifNoneMatch: "*" });
 * await wsp.update("notes/plan.md", (f) => (f?.binary === false ? f.text : "") + "- ship\n");
 * for await (const event of wsp.events({ since: 0 })) console.log(event.payload.path);
 * ```
 */
export class WspClient {
  readonly #base: string;
  readonly #fetch: typeof globalThis.fetch;
  readonly #headers: Record<string, string>;

  constructor(options: WspClientOptions) {
    this.#base = options.baseUrl.replace(/\/+$/, "");
    this.#fetch = options.fetch ?? globalThis.fetch.bind(globalThis);
    this.#headers = { ...options.headers };
    if (options.apiKey !== undefined) this.#headers["Authorization"] = `Bearer ${options.apiKey}`;
  }

  /** The discovery document: protocol version, limits and capabilities. */
  async discovery(signal?: AbortSignal): Promise<Discovery> {
    return this.#json<Discovery>(await this.#send("GET", "/.well-known/openwop", { signal }));
  }

  /** The live files whose path starts with `prefix` (all when absent), sorted by path. */
  async list(options: { prefix?: string; signal?: AbortSignal } = {}): Promise<FileInfo[]> {
    const prefix = options.prefix === undefined ? undefined : checkPrefix(options.prefix);
    const answer = await this.#json<Schemas["WorkspaceFileList"]>(
      await this.#send("GET", "/v1/host/workspace/files", { query: { prefix }, signal: options.signal }),
    );
    return answer.files.map((meta) => infoOf(meta));
  }

  /** The file at `path` (the live version, or `version` when given); {@link WspNotFoundError} when absent. */
  async get(path: string, options: { version?: number; signal?: AbortSignal } = {}): Promise<WspFile> {
    const response = await this.#send("GET", `/v1/host/workspace/files/${pathSegment(path)}`, {
      query: { version: options.version },
      signal: options.signal,
    });
    return fileOf(await this.#json<WireFile>(response), response);
  }

  /** Like {@link get}, but `null` when there is no file at `path`. */
  async find(path: string, options: { signal?: AbortSignal } = {}): Promise<WspFile | null> {
    try {
      return await this.get(path, options);
    } catch (err) {
      if (err instanceof WspNotFoundError) return null;
      throw err;
    }
  }

  /**
   * Writes `content` at `path` (text for a string, bytes for a `Uint8Array`) and answers the
   * stored version. With `ifMatch` or `ifNoneMatch` the write is conditional and a failed
   * condition throws {@link WspConflictError}, changing nothing.
   */
  async put(path: string, content: FileContent, options: PutOptions = {}): Promise<WspFile> {
    const body: Schemas["WorkspaceFileCreate"] =
      typeof content === "string"
        ? { content }
        : { content: toBase64(content), contentEncoding: "base64" };
    if (options.contentType !== undefined) body.contentType = options.contentType;
    const response = await this.#send("PUT", `/v1/host/workspace/files/${pathSegment(path)}`, {
      json: body,
      headers: {
        "If-Match": options.ifMatch,
        "If-None-Match": options.ifNoneMatch,
        "Idempotency-Key": options.idempotencyKey,
      },
      signal: options.signal,
    });
    return fileOf(await this.#json<WireFile>(response), response);
  }

  /** Deletes the file at `path` ({@link WspNotFoundError} when there is none). */
  async delete(path: string, options: DeleteOptions = {}): Promise<void> {
    await this.#drain(
      await this.#send("DELETE", `/v1/host/workspace/files/${pathSegment(path)}`, {
        headers: { "If-Match": options.ifMatch, "Idempotency-Key": options.idempotencyKey },
        signal: options.signal,
      }),
    );
  }

  /** The retained versions of the file's current life, newest first. */
  async history(path: string, options: { signal?: AbortSignal } = {}): Promise<FileInfo[]> {
    const answer = await this.#json<Schemas["WorkspaceFileHistory"]>(
      await this.#send("GET", `/v1/host/workspace/history/${pathSegment(path)}`, { signal: options.signal }),
    );
    return answer.versions.map((meta) => infoOf(meta));
  }

  /**
   * Read-modify-write that loses no concurrent write: reads the file (`null` when there is
   * none), asks `change` for the new body, and writes it on the condition that the file is still
   * the one read (`If-Match`, or `If-None-Match: *` for a new file). When another writer got
   * there first, it reads again and asks `change` again, up to `maxAttempts` times, then throws
   * the last {@link WspConflictError}. `change` answers `undefined` to leave the file as it is;
   * it may be called more than once, so it should only compute.
   *
   * Answers the version written (or the one read, when `change` left it), `null` when there was
   * no file and `change` wrote none.
   */
  async update(
    path: string,
    change: (current: WspFile | null) => FileContent | undefined | Promise<FileContent | undefined>,
    options: UpdateOptions = {},
  ): Promise<WspFile | null> {
    checkPath(path);
    const attempts = Math.max(1, options.maxAttempts ?? 10);
    let conflict: WspConflictError | undefined;
    for (let attempt = 0; attempt < attempts; attempt += 1) {
      const current = await this.find(path, { signal: options.signal });
      const next = await change(current);
      if (next === undefined) return current;
      const contentType = options.contentType ?? current?.contentType;
      try {
        return await this.put(path, next, {
          ...(contentType === undefined ? {} : { contentType }),
          ...(current === null ? { ifNoneMatch: "*" as const } : { ifMatch: current.etag }),
          ...(options.signal === undefined ? {} : { signal: options.signal }),
        });
      } catch (err) {
        if (!(err instanceof WspConflictError)) throw err;
        conflict = err;
      }
    }
    throw conflict ?? new WspResponseError(0, "update made no attempt");
  }

  /**
   * The change feed: every committed write and delete of this key's workspace, in sequence
   * order, as it happens. The body is read as it streams (an event is yielded as soon as it
   * arrives); when the connection ends or breaks, the iterator reconnects with `Last-Event-ID`
   * set to the last sequence number yielded, so no event is lost or repeated. A stream that
   * ends with an error other than `service_unavailable` (such as `feed_position_expired`, or a
   * revoked key) throws that error. Leaving the loop (`break`) or aborting `signal` closes the
   * connection.
   */
  async *events(options: EventsOptions = {}): AsyncGenerator<WorkspaceEvent, void, undefined> {
    const reconnect = options.reconnect ?? true;
    const baseDelay = options.reconnectDelayMs ?? 500;
    const maxReconnects = options.maxReconnects ?? 10;
    let position = options.since;
    let failures = 0;
    let serverDelay: number | undefined;
    const stop = new AbortController();
    const onAbort = () => stop.abort(options.signal?.reason);
    if (options.signal?.aborted) return;
    options.signal?.addEventListener("abort", onAbort, { once: true });
    try {
      for (;;) {
        let failure: unknown;
        try {
          const response = await this.#send("GET", "/v1/host/workspace/events", {
            headers: {
              Accept: "text/event-stream",
              "Last-Event-ID": position === undefined ? undefined : String(position),
            },
            signal: stop.signal,
          });
          const body = response.body;
          if (body === null) throw new WspResponseError(response.status, "the change feed answered no body");
          for await (const message of readEvents(body)) {
            if (message.retry !== undefined) serverDelay = message.retry;
            if (message.event === "workspace.updated") {
              const event = parseJson<WorkspaceEvent>(message.data, response.status);
              position = event.sequence;
              failures = 0;
              yield event;
            } else if (message.event === "error") {
              const envelope: unknown = parseJson(message.data, response.status);
              if (!isErrorEnvelope(envelope)) {
                throw new WspResponseError(response.status, `the change feed ended with ${message.data}`);
              }
              throw apiError(STREAM_ERROR_STATUS[envelope.error] ?? response.status, envelope);
            }
          }
          // The server closed the stream without an error event (a restart or a proxy).
        } catch (err) {
          if (stop.signal.aborted) return;
          // An error of the body's stream (a reset connection) is not a WspError.
          const error = err instanceof WspError ? err : new WspConnectionError(`the change feed broke: ${describe(err)}`, { cause: err });
          if (!retriable(error)) throw error;
          failure = error;
        }
        if (!reconnect) {
          if (failure !== undefined) throw failure;
          return;
        }
        failures += 1;
        if (failures > maxReconnects) {
          throw failure ?? new WspConnectionError(`the change feed closed ${failures} times in a row`);
        }
        const wait = serverDelay ?? baseDelay * 2 ** Math.min(failures - 1, 5);
        if (!(await sleep(wait, stop.signal))) return;
      }
    } finally {
      options.signal?.removeEventListener("abort", onAbort);
      stop.abort();
    }
  }

  /** Starts a run: a pinned, immutable snapshot of the workspace, labelled `workflowId`. */
  async createRun(workflowId: string, extra: Record<string, unknown> = {}, signal?: AbortSignal): Promise<RunCreated> {
    return this.#json<RunCreated>(
      await this.#send("POST", "/v1/runs", { json: { ...extra, workflowId }, signal }),
    );
  }

  /** A run and the files (paths and versions) of its snapshot. */
  async getRun(runId: string, signal?: AbortSignal): Promise<Run> {
    return this.#json<Run>(await this.#send("GET", `/v1/runs/${encodeURIComponent(runId)}`, { signal }));
  }

  /** Ends a run and releases its snapshot. */
  async cancelRun(runId: string, signal?: AbortSignal): Promise<Run> {
    return this.#json<Run>(await this.#send("POST", `/v1/runs/${encodeURIComponent(runId)}/cancel`, { signal }));
  }

  /** One page of runs, newest first; pass `nextCursor` back as `cursor` for the next. */
  async listRuns(options: { limit?: number; cursor?: string; signal?: AbortSignal } = {}): Promise<RunList> {
    return this.#json<RunList>(
      await this.#send("GET", "/v1/runs", {
        query: { limit: options.limit, cursor: options.cursor },
        signal: options.signal,
      }),
    );
  }

  /** The files of a run's snapshot whose path starts with `prefix`. */
  async listRunFiles(runId: string, options: { prefix?: string; signal?: AbortSignal } = {}): Promise<FileInfo[]> {
    const prefix = options.prefix === undefined ? undefined : checkPrefix(options.prefix);
    const answer = await this.#json<Schemas["WorkspaceFileList"]>(
      await this.#send("GET", `/v1/runs/${encodeURIComponent(runId)}/workspace/files`, {
        query: { prefix },
        signal: options.signal,
      }),
    );
    return answer.files.map((meta) => infoOf(meta));
  }

  /** A file as the run's snapshot sees it, whatever was written since. */
  async getRunFile(runId: string, path: string, signal?: AbortSignal): Promise<WspFile> {
    const response = await this.#send(
      "GET",
      `/v1/runs/${encodeURIComponent(runId)}/workspace/files/${pathSegment(path)}`,
      { signal },
    );
    return fileOf(await this.#json<WireFile>(response), response);
  }

  /** The run-start context of the live workspace and its report (as JSON). */
  async context(options: ContextOptions = {}, signal?: AbortSignal): Promise<WorkspaceContext> {
    return this.#json<WorkspaceContext>(
      await this.#send("GET", "/v1/host/workspace/context", {
        query: { ...options },
        headers: { Accept: "application/json" },
        signal,
      }),
    );
  }

  /** The run-start context of the live workspace as text, ready for a system prompt. */
  async contextText(options: ContextOptions = {}, signal?: AbortSignal): Promise<string> {
    const response = await this.#send("GET", "/v1/host/workspace/context", {
      query: { ...options },
      headers: { Accept: "text/plain" },
      signal,
    });
    return response.text();
  }

  /** The run-start context as a run's snapshot sees it (as JSON). */
  async runContext(runId: string, options: ContextOptions = {}, signal?: AbortSignal): Promise<WorkspaceContext> {
    return this.#json<WorkspaceContext>(
      await this.#send("GET", `/v1/runs/${encodeURIComponent(runId)}/context`, {
        query: { ...options },
        headers: { Accept: "application/json" },
        signal,
      }),
    );
  }

  /** Appends one line to today's daily memory log (`memory/YYYY-MM-DD.md`). */
  async appendMemory(text: string, signal?: AbortSignal): Promise<MemoryAppended> {
    return this.#json<MemoryAppended>(
      await this.#send("POST", "/v1/host/workspace/memory", { json: { text }, signal }),
    );
  }

  /** The lines of the live text files that hold the words of `q`, best first. */
  async search(
    q: string,
    options: { prefix?: string; limit?: number; signal?: AbortSignal } = {},
  ): Promise<WorkspaceSearchResults> {
    const prefix = options.prefix === undefined ? undefined : checkPrefix(options.prefix);
    return this.#json<WorkspaceSearchResults>(
      await this.#send("GET", "/v1/host/workspace/search", {
        query: { q, prefix, limit: options.limit },
        signal: options.signal,
      }),
    );
  }

  /** The agents this key may see. */
  async agents(signal?: AbortSignal): Promise<AgentInventory> {
    return this.#json<AgentInventory>(await this.#send("GET", "/v1/agents", { signal }));
  }

  /** One agent of the inventory ({@link WspNotFoundError} when unknown or not visible). */
  async agent(agentId: string, signal?: AbortSignal): Promise<AgentInventoryEntry> {
    return this.#json<AgentInventoryEntry>(
      await this.#send("GET", `/v1/agents/${encodeURIComponent(agentId)}`, { signal }),
    );
  }

  /** Copies a file of this workspace into a shared agent's workspace (one way). */
  async publish(
    request: PublishRequest,
    options: { idempotencyKey?: string; signal?: AbortSignal } = {},
  ): Promise<PublishResponse> {
    return this.#json<PublishResponse>(
      await this.#send("POST", "/v1/host/workspace/publish", {
        json: request,
        headers: { "Idempotency-Key": options.idempotencyKey },
        signal: options.signal,
      }),
    );
  }

  /** Sends one request; an error answer becomes the matching {@link WspApiError}. */
  async #send(method: string, path: string, options: RequestOptions = {}): Promise<Response> {
    const url = new URL(this.#base + path);
    for (const [name, value] of Object.entries(options.query ?? {})) {
      if (value !== undefined) url.searchParams.set(name, String(value));
    }
    const headers: Record<string, string> = { Accept: "application/json", ...this.#headers };
    for (const [name, value] of Object.entries(options.headers ?? {})) {
      if (value !== undefined) headers[name] = value;
    }
    let body: string | undefined;
    if (options.json !== undefined) {
      headers["Content-Type"] = "application/json";
      body = JSON.stringify(options.json);
    }
    let response: Response;
    try {
      response = await this.#fetch(url, {
        method,
        headers,
        ...(body === undefined ? {} : { body }),
        ...(options.signal === undefined ? {} : { signal: options.signal }),
      });
    } catch (err) {
      throw new WspConnectionError(`${method} ${url.pathname}: ${describe(err)}`, { cause: err });
    }
    if (response.ok) return response;
    const text = await response.text().catch(() => "");
    let envelope: unknown;
    try {
      envelope = JSON.parse(text);
    } catch {
      envelope = undefined;
    }
    if (isErrorEnvelope(envelope)) throw apiError(response.status, envelope);
    throw new WspResponseError(
      response.status,
      `${method} ${url.pathname} answered ${response.status} without an error envelope: ${text.slice(0, 200)}`,
    );
  }

  async #json<T>(response: Response): Promise<T> {
    const text = await response.text();
    return parseJson<T>(text, response.status);
  }

  async #drain(response: Response): Promise<void> {
    await response.arrayBuffer();
  }
}

/** Status of the error codes a change-feed stream can end with, for the error class. */
const STREAM_ERROR_STATUS: Record<string, number> = {
  unauthenticated: 401,
  forbidden: 403,
  rate_limited: 429,
  service_unavailable: 503,
};

function retriable(err: unknown): boolean {
  if (err instanceof WspConnectionError) return true;
  // The server shutting down or its store failing: reconnect with Last-Event-ID.
  return err instanceof WspError && "status" in err && err.status === 503;
}

function parseJson<T>(text: string, status: number): T {
  try {
    return JSON.parse(text) as T;
  } catch {
    throw new WspResponseError(status, `the answer is not JSON: ${text.slice(0, 200)}`);
  }
}

function describe(err: unknown): string {
  if (err instanceof Error) {
    const cause = (err as { cause?: unknown }).cause;
    return cause instanceof Error ? `${err.message} (${cause.message})` : err.message;
  }
  return String(err);
}

/** Waits `ms`; `false` when `signal` aborted first. */
function sleep(ms: number, signal: AbortSignal): Promise<boolean> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve(false);
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve(true);
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      resolve(false);
    };
    signal.addEventListener("abort", onAbort, { once: true });
  });
}

function infoOf(meta: WireMeta, etagHeader?: string | null): FileInfo {
  const etag = meta.etag ?? etagHeader ?? undefined;
  if (etag === undefined) {
    throw new WspResponseError(200, `the server sent ${meta.path} without an etag`);
  }
  const info: FileInfo = {
    path: meta.path,
    version: meta.version,
    etag,
    contentType: meta.contentType ?? DEFAULT_CONTENT_TYPE,
    updatedAt: meta.updatedAt,
    binary: meta.contentEncoding === "base64",
  };
  if (meta.updatedBy !== undefined) info.updatedBy = meta.updatedBy;
  if (meta.size !== undefined) info.size = meta.size;
  return info;
}

function fileOf(wire: WireFile, response: Response): WspFile {
  const { content, ...meta } = wire;
  const info = infoOf(meta, response.headers.get("etag"));
  if (info.binary) {
    let bytes: Uint8Array;
    try {
      bytes = fromBase64(content);
    } catch {
      throw new WspResponseError(response.status, `${wire.path}: content is not base64`);
    }
    return { ...info, binary: true, bytes };
  }
  return { ...info, binary: false, text: content };
}
