//! Hosts for the runner's own tests: a fake host of the wire (optionally faulty) and raw TCP
//! listeners that answer garbage.

#![allow(dead_code)]

pub mod agents;
pub mod fake_host;
pub mod garbage;
