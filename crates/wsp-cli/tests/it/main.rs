//! Integration tests of wsp-cli, one binary: the `wsp` binary as users, operators, MCP hosts and
//! deployment recipes drive it (serve, keys, files, agents, context, backup and restore, TLS,
//! PostgreSQL replicas, metrics, shutdown, durability under `kill -9`, the web console), and its
//! help texts as committed insta snapshots. Each module is one area; `support` starts and stops
//! `wsp`.
//!
//! One area: `cargo test -p wsp-cli --test it deploy::` (the module's name and `::`).

mod agents;
mod backup;
mod cli;
mod connections;
mod console;
mod context;
mod data_modes;
mod deploy;
mod files;
mod help;
mod mcp;
mod mcp_resources;
mod memory;
mod metrics;
mod operations;
mod output;
mod postgres;
mod run_limits;
mod serve_tls;
mod shutdown;
mod support;
mod sync;
mod terminal;
mod tls;
mod watch;
