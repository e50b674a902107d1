//! Integration tests of wsp-mcp, one binary: the MCP server as rmcp's client sees it over an
//! in-memory pipe, and the streamable HTTP endpoint against DNS rebinding and hostile
//! connections.

mod http;
mod mcp;
mod memory;
mod prompt;
mod resources;
