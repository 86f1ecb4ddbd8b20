//! Why a request to the page was refused ([`Refusal`]): its status, and its reason, answered as
//! `{"error": …}` and carried on the response for the narration.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

/// Why a request was refused; carried on the response for the narration.
#[derive(Debug, Clone)]
pub(super) struct Refusal {
    pub(super) status: StatusCode,
    pub(super) why: String,
}

impl Refusal {
    pub(super) fn new(status: StatusCode, why: impl Into<String>) -> Refusal {
        Refusal {
            status,
            why: why.into(),
        }
    }
}

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        let body = serde_json::json!({ "error": self.why }).to_string();
        let mut response = (self.status, json_headers(), body).into_response();
        if self.status == StatusCode::UNAUTHORIZED {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        response.extensions_mut().insert(self);
        response
    }
}

pub(super) fn json_headers() -> [(header::HeaderName, &'static str); 1] {
    [(header::CONTENT_TYPE, "application/json")]
}
