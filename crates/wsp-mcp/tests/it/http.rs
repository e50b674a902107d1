//! The streamable HTTP endpoint against DNS rebinding and hostile connections: which `Host`,
//! request target and `Origin` it accepts (403 for the rest, before the bearer token is
//! looked at), and that `serve_http` runs under the connection limits.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use wsp_mcp::{BearerToken, ConnectionLimits, HttpAllowList, HttpAuth, HttpOptions, McpServer};
use wsp_store::MemoryStore;
use wsp_vfs::{MountTable, Vfs};

const PATIENCE: Duration = Duration::from_secs(5);

fn server() -> McpServer {
    let table = MountTable::from_toml_str(
        "[[workspace]]\npath = \"/notes\"\nscope = \"rw\"\nmount = { virtual = \"notes\" }\n",
    )
    .unwrap();
    let vfs = Vfs::builder(table)
        .virtual_store(Arc::new(MemoryStore::default()))
        .build()
        .unwrap();
    McpServer::files(vfs)
}

fn initialize_body() -> String {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "wsp-mcp-test", "version": "0"}}})
    .to_string()
}

/// The status of an `initialize` POST to `target` with `headers` (repeated names are sent
/// repeatedly) and the bearer token.
async fn status(
    router: &axum::Router,
    token: &BearerToken,
    target: &str,
    headers: &[(&str, &str)],
) -> u16 {
    use tower::ServiceExt;
    let mut request = axum::http::Request::post(target)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("authorization", format!("Bearer {}", token.expose()));
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let request = request
        .body(axum::body::Body::from(initialize_body()))
        .unwrap();
    let response = router.clone().oneshot(request).await.unwrap();
    response.status().as_u16()
}

/// Each case: the request target, the headers, the status the endpoint must answer.
type Case<'a> = (&'a str, &'a [(&'a str, &'a str)], u16);

/// Checks `cases` against a router that answers the hosts and origins `allow` names.
async fn check(allow: HttpAllowList, cases: &[Case<'_>]) {
    let token = BearerToken::generate();
    let (router, close) = server().http_router(HttpAuth::Bearer(token.clone()), allow);
    for (target, headers, want) in cases {
        let got = status(&router, &token, target, headers).await;
        assert_eq!(got, *want, "{target} {headers:?}");
    }
    close();
}

#[tokio::test]
async fn only_one_loopback_host_is_accepted() {
    check(
        HttpAllowList::loopback(),
        &[
            ("/mcp", &[("host", "localhost")], 200),
            ("/mcp", &[("host", "LOCALHOST:8080")], 200),
            ("/mcp", &[("host", "127.0.0.1:41234")], 200),
            ("/mcp", &[("host", "127.0.0.2")], 200),
            ("/mcp", &[("host", "[::1]:8080")], 200),
            ("/mcp", &[], 403),
            ("/mcp", &[("host", "evil.example")], 403),
            ("/mcp", &[("host", "localhost.evil.example")], 403),
            ("/mcp", &[("host", "127.0.0.1.evil.example")], 403),
            ("/mcp", &[("host", "user@localhost")], 403),
            ("/mcp", &[("host", "")], 403),
            (
                "/mcp",
                &[("host", "localhost"), ("host", "evil.example")],
                403,
            ),
            ("/mcp", &[("host", "localhost"), ("host", "localhost")], 403),
            (
                "/mcp",
                &[("host", "evil.example"), ("host", "localhost")],
                403,
            ),
        ],
    )
    .await;
}

#[tokio::test]
async fn an_absolute_target_must_name_the_host() {
    check(
        HttpAllowList::loopback(),
        &[
            ("http://localhost/mcp", &[("host", "localhost")], 200),
            (
                "http://localhost:8080/mcp",
                &[("host", "localhost:8080")],
                200,
            ),
            ("http://localhost:80/mcp", &[("host", "localhost")], 200),
            ("http://evil.example/mcp", &[("host", "localhost")], 403),
            ("http://127.0.0.1/mcp", &[("host", "localhost")], 403),
            (
                "http://localhost:8081/mcp",
                &[("host", "localhost:8080")],
                403,
            ),
            ("http://user@localhost/mcp", &[("host", "localhost")], 403),
        ],
    )
    .await;
}

#[tokio::test]
async fn an_origin_must_be_allowed() {
    let host = ("host", "localhost:8080");
    check(
        HttpAllowList::loopback(),
        &[
            ("/mcp", &[host, ("origin", "http://localhost:3000")], 200),
            ("/mcp", &[host, ("origin", "http://127.0.0.1")], 200),
            ("/mcp", &[host, ("origin", "https://[::1]:8443")], 200),
            ("/mcp", &[host, ("origin", "https://evil.example")], 403),
            (
                "/mcp",
                &[host, ("origin", "http://localhost.evil.example")],
                403,
            ),
            ("/mcp", &[host, ("origin", "null")], 403),
            ("/mcp", &[host, ("origin", "file://")], 403),
            ("/mcp", &[host, ("origin", "http://localhost/path")], 403),
            ("/mcp", &[host, ("origin", "")], 403),
            (
                "/mcp",
                &[
                    host,
                    ("origin", "http://localhost"),
                    ("origin", "https://evil.example"),
                ],
                403,
            ),
        ],
    )
    .await;
}

#[tokio::test]
async fn the_allow_list_adds_hosts_and_origins() {
    let allow = HttpAllowList::loopback()
        .allow_host("mcp.example.com")
        .unwrap()
        .allow_host("gateway.example.com:8443")
        .unwrap()
        .allow_origin("https://app.example.com")
        .unwrap();
    check(
        allow,
        &[
            ("/mcp", &[("host", "mcp.example.com")], 200),
            ("/mcp", &[("host", "MCP.example.com:443")], 200),
            ("/mcp", &[("host", "gateway.example.com:8443")], 200),
            ("/mcp", &[("host", "gateway.example.com")], 403),
            ("/mcp", &[("host", "other.example.com")], 403),
            (
                "/mcp",
                &[
                    ("host", "mcp.example.com"),
                    ("origin", "https://app.example.com"),
                ],
                200,
            ),
            (
                "/mcp",
                &[
                    ("host", "mcp.example.com"),
                    ("origin", "https://app.example.com:443"),
                ],
                200,
            ),
            (
                "/mcp",
                &[
                    ("host", "mcp.example.com"),
                    ("origin", "https://app.example.com:8443"),
                ],
                403,
            ),
            (
                "/mcp",
                &[
                    ("host", "mcp.example.com"),
                    ("origin", "http://app.example.com"),
                ],
                403,
            ),
        ],
    )
    .await;
    for bad in ["", "exa mple.com", "user@example.com", "example.com/path"] {
        assert!(HttpAllowList::loopback().allow_host(bad).is_err(), "{bad}");
    }
    for bad in [
        "",
        "app.example.com",
        "https://app.example.com/",
        "null",
        "ftp://x.example",
    ] {
        assert!(
            HttpAllowList::loopback().allow_origin(bad).is_err(),
            "{bad}"
        );
    }
}

#[tokio::test]
async fn a_forbidden_host_is_refused_before_the_token_is_looked_at() {
    let token = BearerToken::generate();
    let (router, close) = server().http_router(HttpAuth::Bearer(token), HttpAllowList::loopback());
    let other = BearerToken::generate();
    assert_eq!(
        status(&router, &other, "/mcp", &[("host", "evil.example")]).await,
        403
    );
    assert_eq!(
        status(&router, &other, "/mcp", &[("host", "localhost")]).await,
        401
    );
    close();
}

/// `serve_http` on an ephemeral port with `limits`; the address and the token.
async fn serve(limits: ConnectionLimits) -> (std::net::SocketAddr, BearerToken) {
    let token = BearerToken::generate();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let options = HttpOptions {
        limits,
        ..HttpOptions::new(HttpAuth::Bearer(token.clone()))
    };
    tokio::spawn(server().serve_http(listener, options, std::future::pending()));
    (addr, token)
}

/// The status line's code of the answer to `raw` sent on a fresh connection.
async fn raw_status(addr: std::net::SocketAddr, raw: &str) -> u16 {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream.write_all(raw.as_bytes()).await.unwrap();
    let mut head = [0u8; 12];
    tokio::time::timeout(PATIENCE, stream.read_exact(&mut head))
        .await
        .expect("an answer")
        .unwrap();
    String::from_utf8_lossy(&head[9..12]).parse().unwrap()
}

#[tokio::test]
async fn over_tcp_two_hosts_and_a_foreign_absolute_target_are_refused() {
    let (addr, token) = serve(ConnectionLimits::default()).await;
    let body = initialize_body();
    let request = |target: &str, hosts: &[String]| {
        let hosts: String = hosts.iter().map(|h| format!("Host: {h}\r\n")).collect();
        format!(
            "POST {target} HTTP/1.1\r\n{hosts}Authorization: Bearer {}\r\n\
             Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
             Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            token.expose(),
            body.len()
        )
    };
    let here = addr.to_string();
    let cases = [
        (request("/mcp", std::slice::from_ref(&here)), 200),
        (request("/mcp", &[here.clone(), "evil.example".into()]), 403),
        (
            request("http://evil.example/mcp", std::slice::from_ref(&here)),
            403,
        ),
        (
            request(&format!("http://{here}/mcp"), std::slice::from_ref(&here)),
            200,
        ),
    ];
    for (raw, want) in cases {
        assert_eq!(raw_status(addr, &raw).await, want, "{raw}");
    }
}

#[tokio::test]
async fn serve_http_closes_a_connection_without_a_whole_header() {
    let (addr, _token) =
        serve(ConnectionLimits::default().with_header_timeout(Duration::from_millis(300))).await;
    let mut half = TcpStream::connect(addr).await.unwrap();
    half.write_all(b"POST /mcp HTTP/1.1\r\nHost: loc")
        .await
        .unwrap();
    let closed = tokio::time::timeout(PATIENCE, async {
        let mut sink = [0u8; 1024];
        loop {
            match half.read(&mut sink).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    })
    .await;
    assert!(closed.is_ok(), "half a header stayed open");
}
