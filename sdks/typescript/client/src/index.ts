/**
 * `@wsp/client`: the TypeScript client of the wsp workspace API.
 *
 * {@link WspClient} calls every operation of the API; its types come from the OpenAPI document
 * (`paths`, `components` and `operations` are exported for those who call the API through
 * another client, such as openapi-fetch).
 *
 * @module
 */

export {
  WspClient,
  fileBytes,
  type AgentInventory,
  type AgentInventoryEntry,
  type BinaryFile,
  type ContextOptions,
  type DeleteOptions,
  type Discovery,
  type EventsOptions,
  type FileContent,
  type FileInfo,
  type MemoryAppended,
  type PublishRequest,
  type PublishResponse,
  type PutOptions,
  type Run,
  type RunCreated,
  type RunList,
  type TextFile,
  type UpdateOptions,
  type WorkspaceContext,
  type WorkspaceEvent,
  type WorkspaceSearchResults,
  type WspClientOptions,
  type WspFile,
} from "./client.js";
export {
  WspApiError,
  WspAuthenticationError,
  WspBadRequestError,
  WspConflictError,
  WspConnectionError,
  WspError,
  WspNotFoundError,
  WspPathError,
  WspPermissionError,
  WspRateLimitError,
  WspResponseError,
  WspServerError,
  WspTooLargeError,
  type ErrorEnvelope,
} from "./errors.js";
export { MAX_PATH_LENGTH, checkPath, checkPrefix, isPath } from "./paths.js";
export { fromBase64, toBase64 } from "./base64.js";
export { readEvents, type ServerSentEvent } from "./sse.js";
export type { components, operations, paths } from "./generated/openapi.js";
