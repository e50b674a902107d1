//! The `wsp` client commands against an `https://` host: `wsp serve` behind a TLS proxy whose
//! certificate a CA made here signed. With `--cacert` (or `WSP_CACERT`) `files`, `context`,
//! `agents` and `conformance` reach it; without, they fail saying the certificate was refused.

use std::process::Output;
use std::sync::Arc;

use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls::ServerConfig;
use wsp_testca::TestCa;

use crate::support::{serve, wsp};

/// Terminates TLS on a free port of 127.0.0.1 and passes the bytes on to `backend`, in a
/// thread of its own for the rest of the test process. Returns the port.
fn tls_proxy(tls: Arc<ServerConfig>, backend: String) -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    listener.set_nonblocking(true).unwrap();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let listener = TcpListener::from_std(listener).unwrap();
            let acceptor = TlsAcceptor::from(tls);
            loop {
                let (tcp, _) = listener.accept().await.unwrap();
                let (acceptor, backend) = (acceptor.clone(), backend.clone());
                tokio::spawn(async move {
                    // A client that refuses the certificate ends here.
                    let Ok(mut tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    let mut plain = TcpStream::connect(&backend).await.unwrap();
                    let _ = tokio::io::copy_bidirectional(&mut tls, &mut plain).await;
                });
            }
        });
    });
    port
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn client_commands_reach_an_https_host_with_its_ca_and_refuse_it_without() {
    let dir = tempfile::tempdir().unwrap();
    let server = serve(&dir.path().join("data"), &[]);
    let test_ca = TestCa::new("wsp test CA");
    let tls = test_ca.issue(&["127.0.0.1"]).server_config();
    let ca = dir.path().join("ca.pem");
    std::fs::write(&ca, test_ca.pem()).unwrap();
    let ca = ca.to_str().unwrap();
    let url = format!(
        "https://127.0.0.1:{}",
        tls_proxy(tls, server.addr().to_owned())
    );
    let env = [("WSP_URL", url.as_str()), ("WSP_API_KEY", server.key())];

    // --cacert on the command line, then WSP_CACERT.
    let put = wsp(
        &["files", "put", "notes/tls.md", "--cacert", ca],
        &env,
        Some("over TLS\n"),
    );
    assert!(put.status.success(), "{}", stderr(&put));
    let with_env = [env[0], env[1], ("WSP_CACERT", ca)];
    let got = wsp(&["files", "get", "notes/tls.md"], &with_env, None);
    assert!(got.status.success(), "{}", stderr(&got));
    assert_eq!(String::from_utf8_lossy(&got.stdout), "over TLS\n");
    let context = wsp(&["context", "render", "--cacert", ca], &env, None);
    assert!(context.status.success(), "{}", stderr(&context));
    let agents = wsp(&["agents", "ls", "--cacert", ca], &env, None);
    assert!(
        !stderr(&agents).contains("certificate"),
        "{}",
        stderr(&agents)
    );
    let conformance = wsp(
        &[
            "conformance",
            "--url",
            &url,
            "--key-a",
            server.key(),
            "--filter",
            "WS-DISC",
            "--filter",
            "WS-PUT",
            "--cacert",
            ca,
        ],
        &[],
        None,
    );
    let report = String::from_utf8_lossy(&conformance.stdout);
    assert!(
        conformance.status.success(),
        "{report}{}",
        stderr(&conformance)
    );
    assert!(report.contains("PASS"), "{report}");

    // Only the system's CAs: refused, and the error says why and what to do.
    for args in [
        &["files", "ls"][..],
        &["context", "render"][..],
        &["agents", "ls"][..],
    ] {
        let refused = wsp(args, &env, None);
        assert!(!refused.status.success(), "{args:?}");
        let text = stderr(&refused);
        assert!(
            text.contains("certificate was refused: invalid peer certificate: UnknownIssuer"),
            "{args:?}: {text}"
        );
    }
    let refused = wsp(&["files", "ls"], &env, None);
    assert_eq!(refused.status.code(), Some(8), "{}", stderr(&refused));
    assert!(
        stderr(&refused).contains("pass its certificate with --cacert"),
        "{}",
        stderr(&refused)
    );
    // With --cacert of another CA: no advice to pass --cacert, but to check what it holds.
    let other = dir.path().join("other.pem");
    std::fs::write(&other, TestCa::new("another CA").pem()).unwrap();
    for env in [
        &[env[0], env[1], ("WSP_CACERT", other.to_str().unwrap())][..],
        &env,
    ] {
        let args: &[&str] = if env.len() == 3 {
            &["files", "ls"]
        } else {
            &["files", "ls", "--cacert", other.to_str().unwrap()]
        };
        let refused = wsp(args, env, None);
        let text = stderr(&refused);
        assert!(!text.contains("pass its certificate"), "{text}");
        assert!(
            text.contains("neither the CA certificates of --cacert"),
            "{text}"
        );
    }
    let conformance = wsp(
        &["conformance", "--url", &url, "--filter", "WS-DISC"],
        &[],
        None,
    );
    assert!(!conformance.status.success());
    let report = String::from_utf8_lossy(&conformance.stdout);
    assert!(report.contains("UnknownIssuer"), "{report}");

    // A --cacert file that holds no certificate is an error of its own.
    let junk = dir.path().join("junk.pem");
    std::fs::write(&junk, "not a certificate\n").unwrap();
    let bad = wsp(
        &["files", "ls", "--cacert", junk.to_str().unwrap()],
        &env,
        None,
    );
    assert!(!bad.status.success());
    assert!(
        stderr(&bad).contains("no PEM certificate"),
        "{}",
        stderr(&bad)
    );
}
