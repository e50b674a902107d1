/**
 * Errors of the wsp client, as values a caller can tell apart with `instanceof`:
 *
 * - {@link WspApiError} (and one subclass per status a caller reacts to): the server answered
 *   with an error envelope (`error`, `message`, `details`);
 * - {@link WspConnectionError}: no answer (the connection failed or was reset);
 * - {@link WspResponseError}: an answer that is not what the document promises (a body that
 *   does not parse, a missing `ETag`);
 * - {@link WspPathError}: a path the client refuses to send, because the server would refuse it
 *   too (or, with `.` and `..` components, because a URL parser would rewrite it).
 *
 * @module
 */

import type { components } from "./generated/openapi.js";

/** The error envelope every wsp error answer carries (`ErrorEnvelope` in the document). */
export type ErrorEnvelope = components["schemas"]["ErrorEnvelope"];

/** Every error this package throws. */
export class WspError extends Error {
  override name = "WspError";
}

/** The server answered with an error envelope. */
export class WspApiError extends WspError {
  override name = "WspApiError";
  /** The HTTP status. */
  readonly status: number;
  /** The machine-readable code (`error`), such as `not_found` or `workspace_conflict`. */
  readonly code: string;
  /** Code-specific facts (`details`), such as `currentVersion` or `requiredScope`; `{}` when absent. */
  readonly details: Readonly<Record<string, unknown>>;
  /** The whole envelope as received. */
  readonly envelope: ErrorEnvelope;

  constructor(status: number, envelope: ErrorEnvelope) {
    super(`${envelope.error}: ${envelope.message}`);
    this.status = status;
    this.code = envelope.error;
    this.details = envelope.details ?? {};
    this.envelope = envelope;
  }
}

/** 400: the request was malformed (`validation_error`); `details.field` often names what. */
export class WspBadRequestError extends WspApiError {
  override name = "WspBadRequestError";
}

/** 401: no credential, or an unknown one (`unauthenticated`). */
export class WspAuthenticationError extends WspApiError {
  override name = "WspAuthenticationError";
}

/** 403: the key lacks a scope (`forbidden`, `details.requiredScope`). */
export class WspPermissionError extends WspApiError {
  override name = "WspPermissionError";
}

/** 404: no such file, version, run or agent (`not_found`). */
export class WspNotFoundError extends WspApiError {
  override name = "WspNotFoundError";
}

/**
 * 409: a precondition failed (`workspace_conflict`: `If-Match` named an older version, or
 * `If-None-Match: *` found a file), or an `Idempotency-Key` was reused for another request.
 */
export class WspConflictError extends WspApiError {
  override name = "WspConflictError";
  /** `details.currentVersion`: the version the server holds, when it said. */
  get currentVersion(): number | undefined {
    const v = this.details["currentVersion"];
    return typeof v === "number" ? v : undefined;
  }
}

/** 413: the body or the file is over a limit (`details.limit` names which). */
export class WspTooLargeError extends WspApiError {
  override name = "WspTooLargeError";
}

/** 429: too many open change-feed streams for this key (`rate_limited`). */
export class WspRateLimitError extends WspApiError {
  override name = "WspRateLimitError";
}

/** 5xx: the server or its store is unavailable; retrying later may succeed. */
export class WspServerError extends WspApiError {
  override name = "WspServerError";
}

/** The request got no answer: the connection failed, was reset, or was aborted. */
export class WspConnectionError extends WspError {
  override name = "WspConnectionError";
}

/** The server answered, but not as its document says it does. */
export class WspResponseError extends WspError {
  override name = "WspResponseError";
  /** The HTTP status of the answer. */
  readonly status: number;
  constructor(status: number, message: string) {
    super(message);
    this.status = status;
  }
}

/** A workspace path the client refuses to send. */
export class WspPathError extends WspError {
  override name = "WspPathError";
  /** The path as given. */
  readonly path: string;
  constructor(path: string, reason: string) {
    super(`invalid workspace path ${JSON.stringify(path)}: ${reason}`);
    this.path = path;
  }
}

/** The error for an error answer with `status` and `envelope`: the subclass for its status. */
export function apiError(status: number, envelope: ErrorEnvelope): WspApiError {
  switch (status) {
    case 400:
      return new WspBadRequestError(status, envelope);
    case 401:
      return new WspAuthenticationError(status, envelope);
    case 403:
      return new WspPermissionError(status, envelope);
    case 404:
      return new WspNotFoundError(status, envelope);
    case 409:
      return new WspConflictError(status, envelope);
    case 413:
      return new WspTooLargeError(status, envelope);
    case 429:
      return new WspRateLimitError(status, envelope);
    default:
      return status >= 500 ? new WspServerError(status, envelope) : new WspApiError(status, envelope);
  }
}

/** Whether `value` has the envelope's shape: a string `error` and `message`. */
export function isErrorEnvelope(value: unknown): value is ErrorEnvelope {
  if (typeof value !== "object" || value === null) return false;
  const v = value as Record<string, unknown>;
  return typeof v["error"] === "string" && typeof v["message"] === "string";
}
