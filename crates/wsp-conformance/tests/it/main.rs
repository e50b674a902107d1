//! Integration tests of wsp-conformance, one binary: the runner against a fake host of the wire,
//! against hosts that are not there or answer garbage, and its own rules; the suite and the agent
//! scenarios against the real `wsp-server` in process, over plain HTTP and over TLS.

mod agents;
mod fake_host;
mod real_host;
mod robustness;
mod runner;
mod support;
mod tls;
