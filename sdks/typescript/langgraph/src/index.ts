/**
 * `@wsp/langgraph`: LangGraph's `BaseStore` over a wsp workspace ({@link WspStore}), and the
 * reversible mapping of namespaces and keys to workspace paths it uses.
 *
 * @module
 */

export { ITEM_CONTENT_TYPE, WspStore, WspStoreItemError, matches, type StoredItem, type WspStoreOptions } from "./store.js";
export { ITEM_SUFFIX, decodeLabel, encodeLabel, itemPath, namespacePrefix, parseItemPath } from "./keys.js";
