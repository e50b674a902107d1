//! What a host cannot make the client do: send the key to another origin through redirects, or
//! read an answer larger than the bound. Plain HTTP hosts on loopback, each answering with what
//! the test gives it and reporting every request head it read.

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use wsp_client::{Client, Error};

/// A host on 127.0.0.1 that answers every request with `answer(head)` (a whole HTTP/1.1
/// response, head and body) and reports each request head it read. Returns its base URL.
async fn host<F>(answer: F) -> (String, mpsc::UnboundedReceiver<String>)
where
    F: Fn(&str) -> Vec<u8> + Send + Sync + 'static,
{
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let (heads, received) = mpsc::unbounded_channel();
    let answer = std::sync::Arc::new(answer);
    tokio::spawn(async move {
        loop {
            let (mut tcp, _) = listener.accept().await.unwrap();
            let heads = heads.clone();
            let answer = answer.clone();
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") {
                    if tcp.read(&mut byte).await.unwrap_or(0) == 0 {
                        return;
                    }
                    head.push(byte[0]);
                }
                let head = String::from_utf8_lossy(&head).into_owned();
                let _ = heads.send(head.clone());
                // A client that stops reading (a bound reached) closes: nothing to do then.
                let _ = tcp.write_all(&answer(&head)).await;
                let _ = tcp.shutdown().await;
            });
        }
    });
    (url, received)
}

/// A `status` redirect to `location`.
fn redirect(status: u16, location: &str) -> Vec<u8> {
    format!(
        "HTTP/1.1 {status} Moved\r\nlocation: {location}\r\ncontent-length: 0\r\n\
         connection: close\r\n\r\n"
    )
    .into_bytes()
}

/// A 200 with a JSON `body`.
fn json(body: &str) -> Vec<u8> {
    format!(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\
         connection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// The request heads a host has read so far.
fn drain(heads: &mut mpsc::UnboundedReceiver<String>) -> Vec<String> {
    let mut all = Vec::new();
    while let Ok(head) = heads.try_recv() {
        all.push(head);
    }
    all
}

/// A -> B -> B (the second hop within B's origin) and A -> A -> B: B never hears from the
/// client, so it never sees the key; the caller gets the redirect, naming B's origin.
#[tokio::test]
async fn the_key_never_reaches_another_origin_through_redirects() {
    let (b, mut b_heads) = host(|head| {
        if head.starts_with("GET /first ") {
            redirect(302, "/second")
        } else {
            json(r#"{"files":[]}"#)
        }
    })
    .await;
    let to_b = format!("{b}/first");
    let (a, mut a_heads) = host(move |head| {
        if head.starts_with("GET /v1/host/workspace/files?prefix=hop ") {
            redirect(307, "/v1/elsewhere")
        } else {
            redirect(302, &to_b)
        }
    })
    .await;
    let client = Client::builder(&a).key("wsp_secret_key").build().unwrap();

    for prefix in [None, Some("hop")] {
        let e = client.list(prefix).await.unwrap_err();
        let Error::Redirected { status, to } = &e else {
            panic!("{prefix:?}: {e:?}");
        };
        assert_eq!(*status, 302, "{prefix:?}");
        assert_eq!(*to, b, "{prefix:?}");
        assert!(e.to_string().contains("not followed"), "{e}");
    }
    assert_eq!(
        drain(&mut b_heads),
        Vec::<String>::new(),
        "B heard the client"
    );
    // The hop within A's origin was followed, with the key: it is A's own.
    let a_heard = drain(&mut a_heads);
    assert_eq!(a_heard.len(), 3, "{a_heard:?}");
    assert!(a_heard[2].starts_with("GET /v1/elsewhere "), "{a_heard:?}");
    assert!(a_heard[2].contains("authorization: Bearer wsp_secret_key"));
}

/// Redirects within the origin still work, the key going along.
#[tokio::test]
async fn a_redirect_within_the_origin_is_followed() {
    let (a, mut heads) = host(|head| {
        if head.starts_with("GET /v1/host/workspace/files ") {
            redirect(308, "/moved")
        } else {
            json(r#"{"files":[]}"#)
        }
    })
    .await;
    let client = Client::builder(&a).key("wsp_k").build().unwrap();
    assert!(client.list(None).await.unwrap().files.is_empty());
    let heard = drain(&mut heads);
    assert_eq!(heard.len(), 2);
    assert!(
        heard[1].contains("authorization: Bearer wsp_k"),
        "{heard:?}"
    );
}

/// An answer over the bound fails as soon as the bound is passed: by its `Content-Length`, or
/// while a body of unknown length streams in; the bound follows the host's `maxFileBytes`.
#[tokio::test]
async fn answers_are_bounded_by_what_the_host_advertises() {
    const DISCOVERY: &str = r#"{"protocolVersion":"1.0","schemaVersions":{},
        "supportedEnvelopes":[],"limits":{"clarificationRounds":0,"envelopesPerTurn":0,
        "schemaRounds":0},"workspace":{"supported":true,"maxFileBytes":1000,"maxFiles":10}}"#;
    let (url, _heads) = host(|head| {
        if head.starts_with("GET /.well-known/openwop ") {
            return json(DISCOVERY);
        }
        let content = "x".repeat(3 * 1024 * 1024);
        let body = format!(
            r#"{{"path":"a.md","content":"{content}","contentType":"text/markdown","version":1}}"#
        );
        if head.starts_with("GET /v1/host/workspace/files/a.md ") {
            json(&body)
        } else {
            // No Content-Length: the body ends when the connection does.
            let mut answer = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n\
                               connection: close\r\n\r\n"
                .to_vec();
            answer.extend_from_slice(body.as_bytes());
            answer
        }
    })
    .await;
    let client = Client::builder(&url).key("k").build().unwrap();
    assert_eq!(
        client.max_response_bytes(),
        wsp_client::DEFAULT_MAX_RESPONSE_BYTES
    );
    let (client, discovery) = client.fit_to_host().await.unwrap();
    let bound = wsp_client::response_bound(&discovery);
    assert_eq!(client.max_response_bytes(), bound);
    assert!(bound < 3 * 1024 * 1024, "{bound}");
    for path in ["a.md", "b.md"] {
        let path = wsp_types::WorkspacePath::parse(path).unwrap();
        let e = client.get(&path, None).await.unwrap_err();
        assert!(
            matches!(e, Error::ResponseTooLarge { max } if max == bound),
            "{path}: {e:?}"
        );
    }
}
