//! `wsp-pgtest`: prints the URL of a PostgreSQL server for tests, on one line of standard
//! output, and which server it is (without its password) on standard error.
//!
//! The server is `WSP_TEST_POSTGRES_URL` when it is set, otherwise a throwaway cluster that
//! lives as long as the program that runs `wsp-pgtest` (its parent), shared by every
//! `wsp-pgtest` that program runs. The program must run it itself: started from a shell's
//! `$(...)`, its parent would be the subshell, which ends at once, and the cluster with it. On
//! failure: one line on standard error, exit status 1.

#[cfg(unix)]
fn main() -> std::process::ExitCode {
    match wsp_pgtest::server(wsp_pgtest::Lifetime::Parent) {
        Ok(server) => {
            println!("{}", server.url());
            eprintln!("PostgreSQL: {server}");
            std::process::ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{e}");
            std::process::ExitCode::FAILURE
        }
    }
}

#[cfg(not(unix))]
fn main() -> std::process::ExitCode {
    eprintln!("wsp-pgtest: throwaway PostgreSQL clusters need a Unix system");
    std::process::ExitCode::FAILURE
}
