/**
 * {@link WspStore}: LangGraph's `BaseStore` over a wsp workspace.
 *
 * @module
 */

import {
  BaseStore,
  type GetOperation,
  type Item,
  type ListNamespacesOperation,
  type MatchCondition,
  type Operation,
  type OperationResults,
  type PutOperation,
  type SearchItem,
  type SearchOperation,
} from "@langchain/langgraph-checkpoint";
import { WspClient, WspError, WspNotFoundError, checkPath, type FileInfo, type WspClientOptions } from "@wsp/client";

import { itemPath, namespacePrefix, parseItemPath } from "./keys.js";

/** The media type of an item's file. */
export const ITEM_CONTENT_TYPE = "application/json";

/** What an item's file holds: the value, and when the item was first put. */
export interface StoredItem {
  /** When the item was created (RFC 3339); kept by every later put. */
  createdAt: string;
  /** The item's value. */
  value: Record<string, unknown>;
}

/** How a {@link WspStore} reaches its workspace. */
export interface WspStoreOptions {
  /** The client to use; or give `baseUrl` and `apiKey` and the store makes one. */
  client?: WspClient;
  /** The server's base URL (when no `client` is given). */
  baseUrl?: string;
  /** The API key (when no `client` is given); it decides whose workspace holds the items. */
  apiKey?: string;
  /** The `fetch` of the client the store makes. */
  fetch?: WspClientOptions["fetch"];
  /** The folder of the workspace that holds the items (default `langgraph-store`). */
  root?: string;
  /** Requests in flight at once for one batch (default 8). */
  concurrency?: number;
  /** Conditional writes tried per put before giving up (default 10). */
  maxAttempts?: number;
}

/** An item's file that is not a store item (not JSON, or not `{createdAt, value}`). */
export class WspStoreItemError extends WspError {
  override name = "WspStoreItemError";
  /** The item's path. */
  readonly path: string;
  constructor(path: string, reason: string) {
    super(`${path} is not a store item: ${reason}`);
    this.path = path;
  }
}

type Filter = Record<string, unknown>;

/**
 * LangGraph's `BaseStore` over a wsp workspace: each item is a JSON file
 * `<root>/<namespace labels>/<key>.json` (see `keys.ts` for the reversible encoding) holding
 * `{"createdAt": ..., "value": ...}`, versioned by wsp (every put is a new version, readable
 * with the client's `history` and `get(path, {version})`) and scoped to the owner of the API
 * key: two keys of two tenants see two stores.
 *
 * - `get` reads one file; `put` writes it with `If-Match` (or `If-None-Match: *` for a new
 *   item), so `createdAt` survives every update even under concurrent writers (a lost race is
 *   read again and retried); a `null` value deletes the file.
 * - `search` lists the files under the namespace prefix, newest first, and reads the values it
 *   answers (all candidates when a `filter` is given: its operators are those of LangGraph's
 *   `InMemoryStore`, on top-level fields). A `query` is answered by wsp's word search
 *   (`GET /v1/host/workspace/search`, the words of the query as prefixes of the words of a
 *   line), ranked by its score; there are no embeddings, so `index` is ignored.
 * - `listNamespaces` derives the namespaces from one listing.
 *
 * Within one `batch`, reads see the store as it was before the batch's puts, which run last
 * (the last put of a key wins), as in `InMemoryStore`.
 *
 * ```ts
 * const store = new WspStore({ baseUrl: "http://127.0.0.1:8787", apiKey: process.env.WSP_KEY });
 * await store.put(["users", "u-1"], "prefs", { theme: "dark" });
 * const item = await store.get(["users", "u-1"], "prefs");
 * const agent = createAgent({ model, tools, store });
 * ```
 */
export class WspStore extends BaseStore {
  /** The client the store speaks through. */
  readonly client: WspClient;
  /** The folder of the workspace that holds the items. */
  readonly root: string;
  readonly #concurrency: number;
  readonly #maxAttempts: number;

  constructor(options: WspStoreOptions) {
    super();
    if (options.client) {
      this.client = options.client;
    } else if (options.baseUrl !== undefined) {
      this.client = new WspClient({
        baseUrl: options.baseUrl,
        ...(options.apiKey === undefined ? {} : { apiKey: options.apiKey }),
        ...(options.fetch === undefined ? {} : { fetch: options.fetch }),
      });
    } else {
      throw new TypeError("WspStore needs a client, or a baseUrl and an apiKey");
    }
    this.root = checkPath(options.root ?? "langgraph-store");
    this.#concurrency = Math.max(1, options.concurrency ?? 8);
    this.#maxAttempts = Math.max(1, options.maxAttempts ?? 10);
  }

  /** The workspace path of the item `key` of `namespace`. */
  pathOf(namespace: readonly string[], key: string): string {
    return itemPath(this.root, namespace, key);
  }

  async batch<Op extends Operation[]>(operations: Op): Promise<OperationResults<Op>> {
    const results: unknown[] = new Array(operations.length).fill(null);
    const reads: Array<() => Promise<void>> = [];
    const puts = new Map<string, PutOperation>();
    operations.forEach((op, i) => {
      if ("namespacePrefix" in op) {
        reads.push(async () => {
          results[i] = await this.#search(op);
        });
      } else if ("matchConditions" in op || ("limit" in op && !("namespace" in op))) {
        reads.push(async () => {
          results[i] = await this.#listNamespaces(op as ListNamespacesOperation);
        });
      } else if ("value" in op) {
        const put = op as PutOperation;
        puts.set(this.pathOf(put.namespace, put.key), put);
      } else {
        const get = op as GetOperation;
        reads.push(async () => {
          results[i] = await this.#get(get.namespace, get.key);
        });
      }
    });
    await this.#all(reads);
    await this.#all([...puts.values()].map((op) => () => this.#put(op)));
    return results as OperationResults<Op>;
  }

  async #get(namespace: string[], key: string): Promise<Item | null> {
    const file = await this.client.find(this.pathOf(namespace, key));
    if (file === null) return null;
    const stored = decode(file.path, file.binary ? undefined : file.text);
    return {
      namespace,
      key,
      value: stored.value,
      createdAt: new Date(stored.createdAt),
      updatedAt: new Date(file.updatedAt),
    };
  }

  async #put(op: PutOperation): Promise<void> {
    const path = this.pathOf(op.namespace, op.key);
    if (op.value === null) {
      try {
        await this.client.delete(path);
      } catch (err) {
        if (!(err instanceof WspNotFoundError)) throw err;
      }
      return;
    }
    const value = op.value;
    await this.client.update(
      path,
      (current) => {
        const createdAt =
          current === null ? new Date().toISOString() : decode(path, current.binary ? undefined : current.text).createdAt;
        const stored: StoredItem = { createdAt, value };
        return `${JSON.stringify(stored, null, 2)}\n`;
      },
      { contentType: ITEM_CONTENT_TYPE, maxAttempts: this.#maxAttempts },
    );
  }

  async #search(op: SearchOperation): Promise<SearchItem[]> {
    const prefix = namespacePrefix(this.root, op.namespacePrefix);
    const limit = op.limit ?? 10;
    const offset = op.offset ?? 0;
    const files = new Map<string, FileInfo>();
    for (const file of await this.client.list({ prefix })) {
      if (parseItemPath(this.root, file.path)) files.set(file.path, file);
    }
    let ranked: Array<{ file: FileInfo; score?: number }>;
    if (op.query !== undefined && op.query.trim() !== "") {
      const found = await this.client.search(op.query, { prefix, limit: 100 });
      const scores = new Map<string, number>();
      for (const match of found.matches) {
        if (files.has(match.path)) scores.set(match.path, Math.max(scores.get(match.path) ?? 0, match.score));
      }
      ranked = [...scores]
        .map(([path, score]) => ({ file: files.get(path) as FileInfo, score }))
        .sort((a, b) => b.score - a.score || byNewest(a.file, b.file));
    } else {
      ranked = [...files.values()].sort(byNewest).map((file) => ({ file }));
    }
    const filter = op.filter;
    const wanted = filter === undefined || Object.keys(filter).length === 0 ? ranked.slice(offset, offset + limit) : ranked;
    const items = await this.#all(
      wanted.map(({ file, score }) => async () => {
        const parsed = parseItemPath(this.root, file.path);
        if (!parsed) return null;
        const item = await this.#get(parsed.namespace, parsed.key);
        if (item === null) return null;
        const found: SearchItem = { ...item };
        if (score !== undefined) found.score = score;
        return found;
      }),
    );
    const present = items.filter((item): item is SearchItem => item !== null);
    if (filter === undefined || Object.keys(filter).length === 0) return present;
    return present.filter((item) => matches(item.value, filter)).slice(offset, offset + limit);
  }

  async #listNamespaces(op: ListNamespacesOperation): Promise<string[][]> {
    const seen = new Map<string, string[]>();
    for (const file of await this.client.list({ prefix: `${this.root}/` })) {
      const parsed = parseItemPath(this.root, file.path);
      if (!parsed) continue;
      let namespace = parsed.namespace;
      if (op.matchConditions?.some((c) => !conditionHolds(c, namespace))) continue;
      if (op.maxDepth !== undefined) namespace = namespace.slice(0, op.maxDepth);
      seen.set(JSON.stringify(namespace), namespace);
    }
    const all = [...seen.values()].sort(compareNamespaces);
    const offset = op.offset ?? 0;
    return all.slice(offset, offset + (op.limit ?? all.length));
  }

  /** Runs `tasks` with at most the configured number in flight; answers in order. */
  async #all<T>(tasks: Array<() => Promise<T>>): Promise<T[]> {
    const results: T[] = new Array(tasks.length);
    let next = 0;
    const worker = async () => {
      while (next < tasks.length) {
        const i = next;
        next += 1;
        results[i] = await (tasks[i] as () => Promise<T>)();
      }
    };
    await Promise.all(Array.from({ length: Math.min(this.#concurrency, tasks.length) }, worker));
    return results;
  }
}

function decode(path: string, text: string | undefined): StoredItem {
  if (text === undefined) throw new WspStoreItemError(path, "it is a binary file");
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new WspStoreItemError(path, "it is not JSON");
  }
  const candidate = parsed as Partial<StoredItem> | null;
  if (
    typeof candidate !== "object" ||
    candidate === null ||
    typeof candidate.createdAt !== "string" ||
    typeof candidate.value !== "object" ||
    candidate.value === null ||
    Array.isArray(candidate.value)
  ) {
    throw new WspStoreItemError(path, 'it is not {"createdAt": string, "value": object}');
  }
  return { createdAt: candidate.createdAt, value: candidate.value };
}

function byNewest(a: FileInfo, b: FileInfo): number {
  return b.updatedAt.localeCompare(a.updatedAt) || (a.path < b.path ? -1 : a.path > b.path ? 1 : 0);
}

function compareNamespaces(a: string[], b: string[]): number {
  for (let i = 0; i < Math.min(a.length, b.length); i += 1) {
    const x = a[i] as string;
    const y = b[i] as string;
    if (x !== y) return x < y ? -1 : 1;
  }
  return a.length - b.length;
}

function conditionHolds(condition: MatchCondition, namespace: string[]): boolean {
  const { matchType, path } = condition;
  if (path.length > namespace.length) return false;
  const start = matchType === "prefix" ? 0 : namespace.length - path.length;
  return path.every((label, i) => label === "*" || namespace[start + i] === label);
}

const OPERATORS = new Set(["$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$in", "$nin"]);

/** Whether `value` passes `filter` (the operators of LangGraph's `InMemoryStore`). */
export function matches(value: Record<string, unknown>, filter: Filter): boolean {
  return Object.entries(filter).every(([field, wanted]) => compare(value[field], wanted));
}

function compare(actual: unknown, wanted: unknown): boolean {
  if (typeof wanted === "object" && wanted !== null && !Array.isArray(wanted)) {
    const ops = Object.entries(wanted);
    if (ops.length > 0 && ops.every(([op]) => OPERATORS.has(op))) {
      return ops.every(([op, operand]) => {
        switch (op) {
          case "$eq":
            return equal(actual, operand);
          case "$ne":
            return !equal(actual, operand);
          case "$gt":
            return Number(actual) > Number(operand);
          case "$gte":
            return Number(actual) >= Number(operand);
          case "$lt":
            return Number(actual) < Number(operand);
          case "$lte":
            return Number(actual) <= Number(operand);
          case "$in":
            return Array.isArray(operand) && operand.some((o) => equal(actual, o));
          default:
            return !Array.isArray(operand) || !operand.some((o) => equal(actual, o));
        }
      });
    }
  }
  return equal(actual, wanted);
}

/** Equality of JSON values (values read back from a file are never the same objects). */
function equal(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
  return JSON.stringify(a) === JSON.stringify(b);
}
