/**
 * Bytes as standard, padded base64 (`contentEncoding: base64` on the wire) and back, with the
 * platform's `btoa`/`atob` (Node.js 16 and later, browsers, Deno, Bun).
 *
 * @module
 */

const CHUNK = 0x8000;

/** `bytes` as standard, padded base64. */
export function toBase64(bytes: Uint8Array): string {
  let binary = "";
  for (let i = 0; i < bytes.length; i += CHUNK) {
    binary += String.fromCharCode(...bytes.subarray(i, i + CHUNK));
  }
  return btoa(binary);
}

/** The bytes of standard, padded base64 `text`; throws on anything else. */
export function fromBase64(text: string): Uint8Array {
  const binary = atob(text);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i += 1) bytes[i] = binary.charCodeAt(i);
  return bytes;
}
