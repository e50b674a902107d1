//! The console's failures, each answered once as a page: the status and what to do next.

use http::StatusCode;

/// What went wrong with a console request.
#[derive(Debug)]
pub(crate) enum ConsoleError {
    /// No session: sign in.
    SignedOut,
    /// The session sat idle too long: sign in again.
    Expired,
    /// A state-changing request without this session's token, or from another site.
    Forbidden(&'static str),
    /// The request itself is malformed (a form field missing, a bad upload).
    BadRequest(String),
    /// The API answered an error.
    Api {
        status: StatusCode,
        code: String,
        message: String,
    },
    /// Something on the server side failed; the detail is never shown to the page.
    Internal(String),
}

impl ConsoleError {
    /// The status the page is answered with.
    pub(crate) fn status(&self) -> StatusCode {
        match self {
            Self::SignedOut | Self::Expired => StatusCode::UNAUTHORIZED,
            Self::Forbidden(_) => StatusCode::FORBIDDEN,
            Self::BadRequest(_) => StatusCode::BAD_REQUEST,
            Self::Api { status, .. } => *status,
            Self::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// One sentence for the person.
    pub(crate) fn explain(&self) -> String {
        match self {
            Self::SignedOut => "You are not signed in.".to_owned(),
            Self::Expired => "Your session ended after a while without use. Sign in again.".into(),
            Self::Forbidden(why) => format!("Refused: {why}."),
            Self::BadRequest(why) => why.clone(),
            Self::Api {
                status,
                code,
                message,
            } => match (status.as_u16(), code.as_str()) {
                (403, _) => format!("Your key may not do this ({message})."),
                (404, _) => format!("Not found ({message})."),
                (501, _) => format!("This server does not offer this ({message})."),
                _ => format!("{message} ({code})."),
            },
            Self::Internal(_) => "The server failed to answer; try again.".to_owned(),
        }
    }
}
