//! Reading the change feed (`GET /v1/host/workspace/events`, Server-Sent Events).

use wsp_types::wire::WorkspaceEvent;

use crate::error::{ApiError, Error, excerpt};

/// One item of the feed.
#[derive(Debug, Clone, PartialEq)]
pub enum FeedItem {
    /// A `workspace.updated` event.
    Updated(WorkspaceEvent),
    /// The stream's closing `error` event (e.g. `feed_position_expired`).
    Error(ApiError),
}

/// An open feed: call [`EventStream::next`] until it returns `None` (the host closed it).
///
/// Comment lines (keep-alives) and unknown event types are skipped.
#[derive(Debug)]
pub struct EventStream {
    resp: reqwest::Response,
    buf: String,
    last_id: Option<u64>,
}

impl EventStream {
    pub(crate) fn new(resp: reqwest::Response) -> Self {
        Self {
            resp,
            buf: String::new(),
            last_id: None,
        }
    }

    /// The id of the last event received: pass it as `since` to resume after a disconnect.
    pub fn last_event_id(&self) -> Option<u64> {
        self.last_id
    }

    /// The next item, `None` when the stream ended.
    pub async fn next(&mut self) -> Option<Result<FeedItem, Error>> {
        loop {
            if let Some(block) = take_block(&mut self.buf) {
                match self.parse(&block) {
                    Some(item) => return Some(item),
                    None => continue,
                }
            }
            match self.resp.chunk().await {
                Ok(Some(chunk)) => match std::str::from_utf8(&chunk) {
                    Ok(text) => self.buf.push_str(&text.replace("\r\n", "\n")),
                    Err(_) => {
                        return Some(Err(Error::UnexpectedBody {
                            status: 200,
                            reason: "the event stream is not UTF-8".into(),
                            body: excerpt(&chunk),
                        }));
                    }
                },
                Ok(None) => return None,
                Err(e) => return Some(Err(Error::transport(e))),
            }
        }
    }

    fn parse(&mut self, block: &str) -> Option<Result<FeedItem, Error>> {
        let (mut id, mut event, mut data) = (None, "message", Vec::new());
        for line in block.lines() {
            let (field, value) = line.split_once(':').unwrap_or((line, ""));
            let value = value.strip_prefix(' ').unwrap_or(value);
            match field {
                "" => {} // a comment
                "id" => id = value.parse::<u64>().ok(),
                "event" => event = value,
                "data" => data.push(value),
                _ => {}
            }
        }
        let data = data.join("\n");
        let bad = |reason: String| {
            Some(Err(Error::UnexpectedBody {
                status: 200,
                reason,
                body: excerpt(data.as_bytes()),
            }))
        };
        match event {
            "workspace.updated" => {
                self.last_id = id.or(self.last_id);
                match serde_json::from_str(&data) {
                    Ok(e) => Some(Ok(FeedItem::Updated(e))),
                    Err(e) => bad(format!("not a workspace event: {e}")),
                }
            }
            "error" => match Error::from_response(200, data.as_bytes()) {
                Error::Api(e) => Some(Ok(FeedItem::Error(e))),
                other => Some(Err(other)),
            },
            _ => None,
        }
    }
}

/// Removes and returns the first complete event block (up to a blank line).
fn take_block(buf: &mut String) -> Option<String> {
    let end = buf.find("\n\n")?;
    let block = buf[..end].to_owned();
    buf.drain(..end + 2);
    Some(block)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_split_on_blank_lines() {
        let mut buf =
            ": keep-alive\n\nid: 1\nevent: workspace.updated\ndata: {}\n\nid: 2".to_owned();
        assert_eq!(take_block(&mut buf).as_deref(), Some(": keep-alive"));
        assert_eq!(
            take_block(&mut buf).as_deref(),
            Some("id: 1\nevent: workspace.updated\ndata: {}")
        );
        assert_eq!(take_block(&mut buf), None);
        assert_eq!(buf, "id: 2");
    }
}
