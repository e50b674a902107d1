//! Integration tests of wsp-context, one binary: rendered contexts (insta), the budget property,
//! the sources (store, snapshot, directory), the daily memory log and the session index.

mod budget;
mod dir_source;
mod memory_log;
mod render;
mod sessions;
mod store_source;
mod support;
