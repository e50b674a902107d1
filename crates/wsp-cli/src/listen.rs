//! The address `wsp serve --addr` and `wsp mcp --http` listen on: `HOST:PORT`, where `HOST` is
//! an IP address (`127.0.0.1`, `[::1]`, `0.0.0.0`) or a host name (`localhost`) resolved at
//! start. A name may resolve to several addresses: the server listens on the first of them
//! that can be bound, in the resolver's order, and logs which.

use std::fmt;
use std::net::{IpAddr, SocketAddr};

use tokio::net::TcpListener;

use crate::CliError;

/// `HOST:PORT`, checked for shape when parsed; the name is resolved by [`ListenAddr::bind`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListenAddr {
    host: String,
    port: u16,
}

impl ListenAddr {
    /// Parses `HOST:PORT` (an IPv6 address in brackets). Port 0 picks a free port.
    ///
    /// ```text
    /// localhost:8787   127.0.0.1:0   [::1]:8787   0.0.0.0:8787
    /// ```
    pub fn parse(raw: &str) -> Result<Self, String> {
        if let Ok(addr) = raw.parse::<SocketAddr>() {
            return Ok(Self {
                host: addr.ip().to_string(),
                port: addr.port(),
            });
        }
        let Some((host, port)) = raw.rsplit_once(':') else {
            return Err("expected HOST:PORT, e.g. localhost:8787 or 127.0.0.1:8787".into());
        };
        let port = port
            .parse::<u16>()
            .map_err(|_| format!("{port:?} is not a port number (0 to 65535)"))?;
        let valid = !host.is_empty()
            && host.len() <= 253
            && host
                .split('.')
                .all(|label| !label.is_empty() && label.len() <= 63)
            && host
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.');
        if !valid {
            return Err(format!(
                "{host:?} is neither an IP address nor a host name (an IPv6 address goes in \
                 brackets: [::1]:8787)"
            ));
        }
        Ok(Self {
            host: host.to_owned(),
            port,
        })
    }

    /// Resolves the host and listens on the first of its addresses that can be bound. When the
    /// host is a name, an INFO line says what it resolved to and which address was bound.
    pub async fn bind(&self) -> Result<TcpListener, CliError> {
        let fail = |why: String| CliError(format!("cannot listen on {self}: {why}"));
        let ip: Option<IpAddr> = self.host.parse().ok();
        let addrs: Vec<SocketAddr> = match ip {
            Some(ip) => vec![SocketAddr::new(ip, self.port)],
            None => tokio::net::lookup_host((self.host.as_str(), self.port))
                .await
                .map_err(|e| fail(format!("the host name does not resolve ({e})")))?
                .collect(),
        };
        let mut last_error = None;
        for addr in &addrs {
            match TcpListener::bind(addr).await {
                Ok(listener) => {
                    if ip.is_none() {
                        let all: Vec<String> = addrs.iter().map(|a| a.ip().to_string()).collect();
                        tracing::info!(
                            "{} resolves to {}; listening on {}",
                            self.host,
                            all.join(", "),
                            listener.local_addr().map_or(*addr, |local| local)
                        );
                    }
                    return Ok(listener);
                }
                // One address: the error says it all. Several: each failure is logged, and
                // the error names the last.
                Err(e) if addrs.len() == 1 => last_error = Some(e.to_string()),
                Err(e) => {
                    tracing::info!("cannot listen on {addr}: {e}");
                    last_error = Some(format!("{addr}: {e}"));
                }
            }
        }
        Err(fail(last_error.unwrap_or_else(|| {
            "the host name resolves to no address".into()
        })))
    }
}

impl fmt::Display for ListenAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.host.contains(':') {
            write!(f, "[{}]:{}", self.host, self.port)
        } else {
            write!(f, "{}:{}", self.host, self.port)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::ListenAddr;

    #[test]
    fn addresses_and_names_with_a_port() {
        let shown = |raw: &str| ListenAddr::parse(raw).map(|a| a.to_string());
        assert_eq!(shown("127.0.0.1:8787").as_deref(), Ok("127.0.0.1:8787"));
        assert_eq!(shown("[::1]:0").as_deref(), Ok("[::1]:0"));
        assert_eq!(shown("localhost:8787").as_deref(), Ok("localhost:8787"));
        assert_eq!(
            shown("wsp.example-1.test:1").as_deref(),
            Ok("wsp.example-1.test:1")
        );
        for bad in [
            "localhost",
            "localhost:",
            ":8787",
            "localhost:99999",
            "a b:1",
            "::1:8787",
            "a..b:1",
        ] {
            assert!(ListenAddr::parse(bad).is_err(), "{bad}");
        }
    }
}
