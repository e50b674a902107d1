//! `cargo xtask console`: the web console's tests in a real browser.
//!
//! Installs Debian's `chromium` and `chromium-driver` with apt-get when `/usr/bin/chromium` or
//! `/usr/bin/chromedriver` is missing, starts chromedriver on a free local port, and runs the
//! ignored tests of `crates/wsp-console/tests/browser.rs` against it (one at a time: each
//! starts its own browser). Screenshots land in `target/console/`. Without a browser the tests
//! fail, never pass.

use std::io::{Read as _, Write as _};
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::Result;
use crate::project::{cargo, project_root, target_dir};

const CHROMIUM: &str = "/usr/bin/chromium";
const CHROMEDRIVER: &str = "/usr/bin/chromedriver";

/// How long chromedriver may take to listen.
const DRIVER_START: Duration = Duration::from_secs(30);

/// How long chromedriver may take to shut down.
const DRIVER_STOP: Duration = Duration::from_secs(5);

/// Runs the browser tests.
pub(crate) fn run() -> Result<()> {
    install_browser()?;
    let port = free_port()?;
    let log = target_dir().join("console");
    std::fs::create_dir_all(&log)?;
    let driver = Command::new(CHROMEDRIVER)
        .arg(format!("--port={port}"))
        .arg("--allowed-ips=127.0.0.1")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(log.join("chromedriver.log"))?)
        .spawn()
        .map_err(|e| format!("{CHROMEDRIVER} did not start: {e}"))?;
    // Stopped however the tests end.
    let driver = Driver(driver, port);
    wait_for_port(port)?;
    let status = Command::new(cargo())
        .current_dir(project_root())
        .args(["test", "-p", "wsp-console", "--test", "browser", "--"])
        .args(["--ignored", "--test-threads=1"])
        .env("WSP_WEBDRIVER_URL", format!("http://127.0.0.1:{port}"))
        .env("WSP_CHROMIUM", CHROMIUM)
        .status()?;
    drop(driver);
    if status.success() {
        println!("screenshots in {}", log.display());
        Ok(())
    } else {
        Err(format!("the browser tests failed ({status})").into())
    }
}

/// The chromedriver process and its port, ended when dropped.
struct Driver(Child, u16);

impl Drop for Driver {
    /// Asks chromedriver to shut down (it closes the browsers it still runs), and kills it
    /// when it has not exited within a few seconds.
    fn drop(&mut self) {
        if let Ok(mut tcp) = TcpStream::connect((Ipv4Addr::LOCALHOST, self.1)) {
            let _ = tcp.set_read_timeout(Some(DRIVER_STOP));
            let request = format!(
                "GET /shutdown HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nConnection: close\r\n\r\n",
                self.1
            );
            if tcp.write_all(request.as_bytes()).is_ok() {
                let _ = tcp.read_to_end(&mut Vec::new());
            }
        }
        let until = Instant::now() + DRIVER_STOP;
        while Instant::now() < until {
            if let Ok(Some(_)) = self.0.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Installs Chromium and its WebDriver from the distribution when either is missing.
fn install_browser() -> Result<()> {
    if Path::new(CHROMIUM).exists() && Path::new(CHROMEDRIVER).exists() {
        return Ok(());
    }
    println!("installing chromium and chromium-driver (apt-get)");
    let apt = |args: &[&str]| -> Result<()> {
        let status = Command::new("apt-get")
            .args(args)
            .env("DEBIAN_FRONTEND", "noninteractive")
            .status()
            .map_err(|e| {
                format!("apt-get did not run ({e}): install chromium and chromium-driver")
            })?;
        if status.success() {
            Ok(())
        } else {
            Err(format!(
                "apt-get {} failed ({status}); it needs root",
                args.join(" ")
            )
            .into())
        }
    };
    apt(&["update"])?;
    apt(&["install", "-y", "chromium", "chromium-driver"])?;
    for program in [CHROMIUM, CHROMEDRIVER] {
        if !Path::new(program).exists() {
            return Err(format!("{program} is still missing after the install").into());
        }
    }
    Ok(())
}

/// A local port nothing listens on now.
fn free_port() -> Result<u16> {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
    Ok(listener.local_addr()?.port())
}

/// Waits until something accepts connections on the local `port`.
fn wait_for_port(port: u16) -> Result<()> {
    let until = Instant::now() + DRIVER_START;
    while Instant::now() < until {
        if TcpStream::connect((Ipv4Addr::LOCALHOST, port)).is_ok() {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    Err(format!("chromedriver did not listen on port {port} within {DRIVER_START:?}").into())
}
