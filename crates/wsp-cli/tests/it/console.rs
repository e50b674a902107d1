//! `wsp serve` serves the web console beside the API: `/` leads to it, a sign-in sets the
//! session cookie (`Secure` when the server terminates TLS), `--console-idle` ends an idle
//! session, and the API answers as before. The console's own behaviour is tested in
//! `crates/wsp-console`.

#![cfg(unix)]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use tokio_rustls::rustls::pki_types::ServerName;
use tokio_rustls::rustls::{ClientConnection, StreamOwned};
use wsp_testca::TestCa;

use crate::support::{serve, serve_command, start};

/// Sends `request` on `stream` and answers the response's head (status line and headers).
fn head(stream: &mut (impl Read + Write), request: &str) -> String {
    stream.write_all(request.as_bytes()).unwrap();
    stream.flush().unwrap();
    let mut buf = Vec::new();
    loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            return String::from_utf8_lossy(&buf[..i]).into_owned();
        }
        let mut chunk = [0u8; 4096];
        let n = stream.read(&mut chunk).unwrap();
        assert!(n > 0, "closed before a response: {buf:?}");
        buf.extend_from_slice(&chunk[..n]);
    }
}

fn get(path: &str, host: &str, extra: &str) -> String {
    format!("GET {path} HTTP/1.1\r\nHost: {host}\r\n{extra}Connection: close\r\n\r\n")
}

fn sign_in(host: &str, key: &str) -> String {
    let body = format!("key={key}");
    format!(
        "POST /console/sign-in HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}

/// The value of header `name` in `head`.
fn header<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.lines().find_map(|l| {
        let (n, v) = l.split_once(':')?;
        n.eq_ignore_ascii_case(name).then(|| v.trim())
    })
}

#[test]
fn serve_serves_the_console_beside_the_api() {
    let dir = tempfile::tempdir().unwrap();
    let server = serve(dir.path(), &["--store", "memory", "--console-idle", "1"]);
    let addr = server.addr().to_owned();
    let call = |request: String| head(&mut TcpStream::connect(&addr).unwrap(), &request);

    let root = call(get("/", &addr, ""));
    assert!(root.starts_with("HTTP/1.1 303"), "{root}");
    assert_eq!(header(&root, "location"), Some("/console/"));

    let signed = call(sign_in(&addr, server.key()));
    assert!(signed.starts_with("HTTP/1.1 303"), "{signed}");
    let cookie = header(&signed, "set-cookie").unwrap().to_owned();
    assert!(
        cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"),
        "{cookie}"
    );
    assert!(!cookie.contains("Secure"), "plain HTTP: {cookie}");
    let pair = cookie.split(';').next().unwrap().to_owned();

    let files = call(get("/console/files", &addr, &format!("Cookie: {pair}\r\n")));
    assert!(files.starts_with("HTTP/1.1 200"), "{files}");
    assert!(
        header(&files, "content-security-policy")
            .unwrap()
            .contains("frame-ancestors 'none'")
    );
    // The API is served as before, and its unknown paths are still its JSON 404.
    let api = call(get(
        "/v1/host/workspace/files",
        &addr,
        &format!("Authorization: Bearer {}\r\n", server.key()),
    ));
    assert!(api.starts_with("HTTP/1.1 200"), "{api}");
    let unknown = call(get("/v2/nothing", &addr, ""));
    assert!(unknown.starts_with("HTTP/1.1 404"), "{unknown}");
    assert_eq!(header(&unknown, "content-type"), Some("application/json"));

    // `--console-idle 1`: a second and a half later the session is over.
    std::thread::sleep(Duration::from_millis(1500));
    let idle = call(get("/console/files", &addr, &format!("Cookie: {pair}\r\n")));
    assert!(idle.starts_with("HTTP/1.1 401"), "{idle}");
}

#[test]
fn over_tls_the_console_cookie_is_secure() {
    let dir = tempfile::tempdir().unwrap();
    let ca = TestCa::new("wsp test CA");
    let files = ca.leaf().files();
    let mut command = serve_command(
        &dir.path().join("data"),
        &[
            "--store",
            "memory",
            "--tls-cert",
            files.cert().to_str().unwrap(),
            "--tls-key",
            files.key().to_str().unwrap(),
        ],
    );
    let server = start(&mut command);
    let addr = server.addr().to_owned();
    let name = ServerName::try_from("127.0.0.1").unwrap();
    let conn = ClientConnection::new(ca.client_config(), name).unwrap();
    let tcp = TcpStream::connect(&addr).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut tls = StreamOwned::new(conn, tcp);
    let signed = head(&mut tls, &sign_in(&addr, server.key()));
    assert!(signed.starts_with("HTTP/1.1 303"), "{signed}");
    let cookie = header(&signed, "set-cookie").unwrap();
    assert!(cookie.contains("; Secure"), "{cookie}");
}
