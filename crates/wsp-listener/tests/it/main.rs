//! Integration tests of wsp-listener, one binary: the listener as a hostile client meets it
//! over raw TCP, and over TLS with real clients.

mod listener;
mod support;
mod tls;
