/**
 * {@link WspBackend}: a Deep Agents backend (`BackendProtocolV2`) over a wsp workspace.
 *
 * @module
 */

import {
  WspClient,
  WspConflictError,
  WspError,
  WspNotFoundError,
  checkPrefix,
  fromBase64,
  isPath,
  type FileInfo as WspFileInfo,
  type WspClientOptions,
  type WspFile,
} from "@wsp/client";
import {
  applyGrepMaxCount,
  normalizeReadPagination,
  type BackendProtocolV2,
  type DeleteResult,
  type EditResult,
  type FileDownloadResponse,
  type FileInfo,
  type FileUploadResponse,
  type GlobResult,
  type GrepMatch,
  type GrepResult,
  type LsResult,
  type ReadRawResult,
  type ReadResult,
  type WriteResult,
} from "deepagents";
import micromatch from "micromatch";

/** How a {@link WspBackend} reaches its workspace. */
export interface WspBackendOptions {
  /** The client to use; or give `baseUrl` and `apiKey` and the backend makes one. */
  client?: WspClient;
  /** The server's base URL (when no `client` is given). */
  baseUrl?: string;
  /** The API key (when no `client` is given): the agent sees this key's workspace. */
  apiKey?: string;
  /** The `fetch` of the client the backend makes. */
  fetch?: WspClientOptions["fetch"];
  /**
   * The folder of the workspace the agent's `/` stands for, such as `agents/reviewer/`
   * (default: the whole workspace). It ends in `/`.
   */
  root?: string;
  /** Conditional writes an `edit` tries before it reports that the file keeps changing (default 10). */
  maxEditAttempts?: number;
  /** Files read at once by `grep` (default 8). */
  concurrency?: number;
}

/** Media types by extension, for a file's `contentType` and to tell text from bytes. */
const MEDIA_TYPES: Record<string, string> = {
  ".md": "text/markdown",
  ".markdown": "text/markdown",
  ".txt": "text/plain",
  ".json": "application/json",
  ".js": "application/javascript",
  ".mjs": "application/javascript",
  ".ts": "text/plain",
  ".py": "text/plain",
  ".html": "text/html",
  ".css": "text/css",
  ".csv": "text/csv",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".jpg": "image/jpeg",
  ".jpeg": "image/jpeg",
  ".gif": "image/gif",
  ".webp": "image/webp",
  ".pdf": "application/pdf",
  ".mp3": "audio/mpeg",
  ".wav": "audio/wav",
  ".mp4": "video/mp4",
  ".zip": "application/zip",
};

/** The media type of `path` by its extension (`text/plain` when unknown, as Deep Agents does). */
export function mediaTypeOf(path: string): string {
  const name = path.slice(path.lastIndexOf("/") + 1);
  const dot = name.lastIndexOf(".");
  return (dot > 0 && MEDIA_TYPES[name.slice(dot).toLowerCase()]) || "text/plain";
}

/** Whether a media type is text (as Deep Agents tells them apart). */
export function isTextMediaType(type: string): boolean {
  return (
    type.startsWith("text/") || type === "application/json" || type === "application/javascript" || type === "image/svg+xml"
  );
}

/**
 * A Deep Agents backend whose files are the versioned files of a wsp workspace: the agent's
 * `/notes/plan.md` is the workspace path `<root>notes/plan.md` of the API key's owner.
 *
 * Nothing a concurrent writer wrote is lost:
 *
 * - `edit` reads the file, replaces the string and writes it back with `If-Match`. When another
 *   agent wrote the file in between, it reads the new version and replaces the string there,
 *   which is the same edit as long as the old string is still in the file (and still unique,
 *   unless `replaceAll`); when it no longer is, the edit fails with an error the agent reads.
 * - `write` replaces a file only if it is still the version this backend last read or wrote
 *   (`If-Match`); a file it has never seen is only created (`If-None-Match: *`). Otherwise the
 *   write fails with an error that tells the agent to read the file first. So one backend per
 *   agent: the versions it remembers are what its agent has seen.
 *
 * `ls` and `glob` list the workspace (one request), `read` reads one file, `grep` reads the
 * text files under the path (one request each, `concurrency` at a time). Text files are
 * stored as text with the media type of their extension; a write to a path of a binary type
 * (such as `.png`) takes base64 content and stores the bytes, as Deep Agents' own backends do.
 *
 * ```ts
 * const backend = new WspBackend({ baseUrl: "http://127.0.0.1:8787", apiKey: process.env.WSP_KEY, root: "agents/a/" });
 * const agent = createDeepAgent({ model, backend });
 * ```
 */
export class WspBackend implements BackendProtocolV2 {
  /** The client the backend speaks through. */
  readonly client: WspClient;
  /** The folder of the workspace the agent's `/` stands for (empty, or ending in `/`). */
  readonly root: string;
  readonly #maxEditAttempts: number;
  readonly #concurrency: number;
  /** The etag of each path's version this backend last read or wrote. */
  readonly #seen = new Map<string, string>();

  constructor(options: WspBackendOptions) {
    if (options.client) {
      this.client = options.client;
    } else if (options.baseUrl !== undefined) {
      this.client = new WspClient({
        baseUrl: options.baseUrl,
        ...(options.apiKey === undefined ? {} : { apiKey: options.apiKey }),
        ...(options.fetch === undefined ? {} : { fetch: options.fetch }),
      });
    } else {
      throw new TypeError("WspBackend needs a client, or a baseUrl and an apiKey");
    }
    const root = options.root ?? "";
    if (root !== "" && !root.endsWith("/")) throw new TypeError(`root ${JSON.stringify(root)} must end in /`);
    this.root = checkPrefix(root);
    this.#maxEditAttempts = Math.max(1, options.maxEditAttempts ?? 10);
    this.#concurrency = Math.max(1, options.concurrency ?? 8);
  }

  /** The workspace path of the agent's `path`, or `undefined` when it is not a valid one. */
  workspacePath(path: string): string | undefined {
    const relative = path.replace(/^\/+/, "");
    const full = this.root + relative;
    return relative !== "" && isPath(full) ? full : undefined;
  }

  /** The agent's path of a workspace path under the root. */
  agentPath(workspacePath: string): string {
    return `/${workspacePath.slice(this.root.length)}`;
  }

  /** The list prefix of the agent's directory `path` (`/` is the root). */
  #dirPrefix(path: string | null | undefined): string | undefined {
    const relative = (path ?? "/").replace(/^\/+/, "").replace(/\/+$/, "");
    const prefix = relative === "" ? this.root : `${this.root}${relative}/`;
    try {
      return checkPrefix(prefix);
    } catch {
      return undefined;
    }
  }

  async ls(path: string): Promise<LsResult> {
    const prefix = this.#dirPrefix(path);
    if (prefix === undefined) return { error: `Error: invalid path '${path}'` };
    try {
      const entries: FileInfo[] = [];
      const dirs = new Set<string>();
      for (const file of await this.client.list({ prefix })) {
        const rest = file.path.slice(prefix.length);
        const slash = rest.indexOf("/");
        if (slash >= 0) {
          dirs.add(rest.slice(0, slash));
          continue;
        }
        entries.push(infoOf(this.agentPath(file.path), file));
      }
      for (const dir of dirs) {
        entries.push({ path: `${this.agentPath(prefix)}${dir}/`, is_dir: true, size: 0, modified_at: "" });
      }
      entries.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
      return { files: entries };
    } catch (err) {
      return { error: failure(err) };
    }
  }

  async read(filePath: string, offset = 0, limit = 500): Promise<ReadResult> {
    const file = await this.#read(filePath);
    if ("error" in file) return { error: file.error };
    if (file.binary) return { content: file.bytes, mimeType: file.contentType };
    // Deep Agents' read_file shows a text body only under a text media type.
    const mimeType = isTextMediaType(file.contentType) ? file.contentType : "text/plain";
    const { offset: start, limit: count } = normalizeReadPagination(offset, limit);
    const lines = file.text.split("\n");
    const totalLines = lines[lines.length - 1] === "" ? lines.length - 1 : lines.length;
    const selected = lines.slice(start, start + count);
    if (selected.length === 0 || start >= totalLines || count === 0) {
      return { content: selected.join("\n"), mimeType };
    }
    const end = Math.min(start + selected.length, totalLines);
    const result: ReadResult = {
      content: selected.join("\n"),
      mimeType,
      totalLines,
      startLine: start + 1,
      endLine: end,
    };
    if (end < totalLines) result.nextOffset = end;
    return result;
  }

  async readRaw(filePath: string): Promise<ReadRawResult> {
    const file = await this.#read(filePath);
    if ("error" in file) return { error: file.error };
    return {
      data: {
        content: file.binary ? file.bytes : file.text,
        mimeType: file.contentType,
        created_at: file.updatedAt,
        modified_at: file.updatedAt,
      },
    };
  }

  async write(filePath: string, content: string): Promise<WriteResult> {
    const path = this.workspacePath(filePath);
    if (path === undefined) return { error: invalid(filePath) };
    const contentType = mediaTypeOf(path);
    let body: string | Uint8Array = content;
    if (!isTextMediaType(contentType)) {
      try {
        body = fromBase64(content.replace(/^data:[^,]*,/, "").replace(/\s/g, ""));
      } catch {
        return { error: `Error: '${filePath}' is a ${contentType} file: write its bytes as base64` };
      }
    }
    const seen = this.#seen.get(path);
    try {
      const file = await this.client.put(path, body, {
        contentType,
        ...(seen === undefined ? { ifNoneMatch: "*" as const } : { ifMatch: seen }),
      });
      this.#seen.set(path, file.etag);
      return { path: filePath, filesUpdate: null };
    } catch (err) {
      if (err instanceof WspConflictError) {
        return {
          error:
            seen === undefined
              ? `Error: '${filePath}' already exists and you have not read it. Read it first, then write or edit it, so that no one's changes are lost.`
              : `Error: '${filePath}' was changed by someone else since you last read it (it is now at version ${err.currentVersion ?? "?"}). Read it again, then write or edit it.`,
        };
      }
      return { error: failure(err) };
    }
  }

  async edit(filePath: string, oldString: string, newString: string, replaceAll = false): Promise<EditResult> {
    const path = this.workspacePath(filePath);
    if (path === undefined) return { error: invalid(filePath) };
    for (let attempt = 0; attempt < this.#maxEditAttempts; attempt += 1) {
      const file = await this.#read(filePath);
      if ("error" in file) return { error: file.error };
      if (file.binary) return { error: `Error: '${filePath}' is a binary file and cannot be edited` };
      const replaced = replace(file.text, oldString, newString, replaceAll);
      if (typeof replaced === "string") {
        return { error: attempt === 0 ? replaced : `${replaced} (the file was changed by someone else while you edited it)` };
      }
      try {
        const written = await this.client.put(path, replaced.content, {
          contentType: file.contentType,
          ifMatch: file.etag,
        });
        this.#seen.set(path, written.etag);
        return { path: filePath, filesUpdate: null, occurrences: replaced.occurrences };
      } catch (err) {
        if (err instanceof WspConflictError) continue;
        return { error: failure(err) };
      }
    }
    return { error: `Error: '${filePath}' kept changing while it was edited; read it again and retry` };
  }

  async grep(pattern: string, path?: string | null, glob?: string | null, maxCount?: number | null): Promise<GrepResult> {
    const files = await this.#under(path);
    if ("error" in files) return { error: files.error };
    let candidates = files.files.filter((f) => !f.binary);
    if (glob) {
      candidates = candidates.filter((f) => micromatch.isMatch(basename(f.path), glob, { dot: true, nobrace: false }));
    }
    try {
      const texts = await this.#all(
        candidates.map((f) => async () => {
          const file = await this.client.find(f.path);
          return file === null || file.binary ? undefined : file;
        }),
      );
      const matches: GrepMatch[] = [];
      for (const file of texts) {
        if (file === undefined || file.binary) continue;
        file.text.split("\n").forEach((text, i) => {
          if (text.includes(pattern)) matches.push({ path: this.agentPath(file.path), line: i + 1, text });
        });
      }
      matches.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : a.line - b.line));
      return applyGrepMaxCount({ result: { matches }, maxCount });
    } catch (err) {
      return { error: failure(err) };
    }
  }

  async glob(pattern: string, path = "/"): Promise<GlobResult> {
    const files = await this.#under(path);
    if ("error" in files) return { error: files.error };
    const base = files.prefix;
    const found = files.files
      .filter((f) => {
        const relative = f.path.slice(base.length) || basename(f.path);
        return micromatch.isMatch(relative, pattern, { dot: true, nobrace: false });
      })
      .sort((a, b) => b.updatedAt.localeCompare(a.updatedAt))
      .map((f) => infoOf(this.agentPath(f.path), f));
    return { files: found };
  }

  async delete(filePath: string): Promise<DeleteResult> {
    const exact = this.workspacePath(filePath.replace(/\/+$/, ""));
    const prefix = this.#dirPrefix(filePath);
    if (exact === undefined && prefix === undefined) return { error: invalid(filePath) };
    try {
      const targets = new Set<string>();
      if (prefix !== undefined && prefix !== "") {
        for (const f of await this.client.list({ prefix })) targets.add(f.path);
      }
      if (exact !== undefined && (await this.client.find(exact)) !== null) targets.add(exact);
      if (targets.size === 0) return { error: `Error: File '${filePath}' not found` };
      await this.#all(
        [...targets].map((path) => async () => {
          try {
            const seen = this.#seen.get(path);
            await this.client.delete(path, seen === undefined ? {} : { ifMatch: seen });
          } catch (err) {
            if (!(err instanceof WspNotFoundError)) throw err;
          }
          this.#seen.delete(path);
        }),
      );
      return { path: filePath, filesUpdate: null };
    } catch (err) {
      if (err instanceof WspConflictError) {
        return { error: `Error: '${filePath}' was changed by someone else since you last read it; read it again first` };
      }
      return { error: failure(err) };
    }
  }

  async uploadFiles(files: Array<[string, Uint8Array]>): Promise<FileUploadResponse[]> {
    return this.#all(
      files.map(([filePath, bytes]) => async (): Promise<FileUploadResponse> => {
        const path = this.workspacePath(filePath);
        if (path === undefined) return { path: filePath, error: "invalid_path" };
        const contentType = mediaTypeOf(path);
        let body: string | Uint8Array = bytes;
        if (isTextMediaType(contentType)) {
          try {
            body = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
          } catch {
            body = bytes;
          }
        }
        try {
          const file = await this.client.put(path, body, { contentType });
          this.#seen.set(path, file.etag);
          return { path: filePath, error: null };
        } catch (err) {
          return { path: filePath, error: err instanceof WspError && "status" in err && err.status === 403 ? "permission_denied" : "invalid_path" };
        }
      }),
    );
  }

  async downloadFiles(paths: string[]): Promise<FileDownloadResponse[]> {
    return this.#all(
      paths.map((filePath) => async (): Promise<FileDownloadResponse> => {
        const path = this.workspacePath(filePath);
        if (path === undefined) return { path: filePath, content: null, error: "invalid_path" };
        try {
          const file = await this.client.find(path);
          if (file === null) return { path: filePath, content: null, error: "file_not_found" };
          return { path: filePath, content: file.binary ? file.bytes : new TextEncoder().encode(file.text), error: null };
        } catch (err) {
          return { path: filePath, content: null, error: err instanceof WspError && "status" in err && err.status === 403 ? "permission_denied" : "file_not_found" };
        }
      }),
    );
  }

  /** Reads a file for the agent and remembers its version. */
  async #read(filePath: string): Promise<WspFile | { error: string }> {
    const path = this.workspacePath(filePath);
    if (path === undefined) return { error: invalid(filePath) };
    try {
      const file = await this.client.get(path);
      this.#seen.set(path, file.etag);
      return file;
    } catch (err) {
      if (err instanceof WspNotFoundError) return { error: `Error: File '${filePath}' not found` };
      return { error: failure(err) };
    }
  }

  /** The files under the agent's `path`: the file it names, or those of the folder it names. */
  async #under(path: string | null | undefined): Promise<{ files: WspFileInfo[]; prefix: string } | { error: string }> {
    const prefix = this.#dirPrefix(path);
    if (prefix === undefined) return { error: invalid(path ?? "/") };
    try {
      const exact = path ? this.workspacePath(path) : undefined;
      if (exact !== undefined) {
        const [file] = await this.client.list({ prefix: exact });
        if (file !== undefined && file.path === exact) return { files: [file], prefix: exact };
      }
      return { files: await this.client.list({ prefix }), prefix };
    } catch (err) {
      return { error: failure(err) };
    }
  }

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

function infoOf(path: string, file: WspFileInfo): FileInfo {
  const info: FileInfo = { path, is_dir: false, modified_at: file.updatedAt };
  if (file.size !== undefined) info.size = file.size;
  return info;
}

function basename(path: string): string {
  return path.slice(path.lastIndexOf("/") + 1);
}

function invalid(path: string): string {
  return `Error: invalid path '${path}': a workspace path holds only A-Z a-z 0-9 . _ / - and no empty, '.' or '..' part`;
}

function failure(err: unknown): string {
  return `Error: ${err instanceof Error ? err.message : String(err)}`;
}

/**
 * Deep Agents' string replacement: the new content and the number of replacements, or the
 * error the agent reads.
 */
export function replace(
  content: string,
  oldString: string,
  newString: string,
  replaceAll: boolean,
): { content: string; occurrences: number } | string {
  if (content === "" && oldString === "") return { content: newString, occurrences: 0 };
  if (oldString === "") return "Error: oldString cannot be empty when file has content";
  const occurrences = content.split(oldString).length - 1;
  if (occurrences === 0) return `Error: String not found in file: '${oldString}'`;
  if (occurrences > 1 && !replaceAll) {
    return `Error: String '${oldString}' has multiple occurrences (appears ${occurrences} times) in file. Use replace_all=True to replace all instances, or provide a more specific string with surrounding context.`;
  }
  return { content: content.split(oldString).join(newString), occurrences };
}
