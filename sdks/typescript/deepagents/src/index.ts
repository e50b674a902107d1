/**
 * `@wsp/deepagents`: a Deep Agents backend over a wsp workspace ({@link WspBackend}).
 *
 * @module
 */

export { WspBackend, isTextMediaType, mediaTypeOf, replace, type WspBackendOptions } from "./backend.js";
