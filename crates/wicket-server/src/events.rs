//! The session's events: the log so far in one response, and the live
//! stream (server-sent events) that replays from a seq and then follows.

use std::convert::Infallible;

use axum::extract::{Path as UrlPath, Query, State};
use axum::http::{HeaderMap, header};
use axum::response::IntoResponse;
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use futures_util::Stream;
use serde::Deserialize;
use wicket_protocol::{Event, SessionId};

use crate::Shared;
use crate::api::{ApiError, blocking};

/// Where a replay starts: the events after this seq.
#[derive(Deserialize)]
pub struct After {
    after: Option<u64>,
}

/// The log after `after` in one JSON response, `{"events": […]}`: what the
/// page loads a long session with before it follows the event stream from
/// the last seq (one response parses far faster than 10,000 SSE messages).
pub async fn log(
    State(server): State<Shared>,
    UrlPath(id): UrlPath<SessionId>,
    Query(query): Query<After>,
) -> Result<impl IntoResponse, ApiError> {
    #[derive(serde::Serialize)]
    struct Log {
        events: Vec<Event>,
    }
    let after = query.after.unwrap_or(0);
    let events = blocking(&server.manager, move |manager| {
        manager.events_after(&id, after)
    })
    .await?;
    let body = serde_json::to_vec(&Log { events }).map_err(ApiError::internal)?;
    Ok(([(header::CONTENT_TYPE, "application/json")], body))
}

fn sse_event(event: &Event) -> SseEvent {
    SseEvent::default()
        .id(event.seq.to_string())
        .data(wicket_protocol::json::text(event))
}

/// Replays the log after `after` (or `Last-Event-ID`), then streams live.
pub async fn events(
    State(server): State<Shared>,
    UrlPath(id): UrlPath<SessionId>,
    Query(query): Query<After>,
    headers: HeaderMap,
) -> Result<Sse<impl Stream<Item = Result<SseEvent, Infallible>>>, ApiError> {
    let resume = headers
        .get("last-event-id")
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.parse::<u64>().ok());
    let after = resume.or(query.after).unwrap_or(0);
    let follower = blocking(&server.manager, move |manager| manager.follow(&id, after)).await?;
    let stream = futures_util::stream::unfold(follower, |mut follower| async move {
        // A follower that cannot catch up from the log ends the stream; the
        // page reconnects from its last seq (Last-Event-ID).
        let event = follower.next().await.ok()??;
        Some((Ok(sse_event(&event)), follower))
    });
    Ok(Sse::new(stream).keep_alive(KeepAlive::default()))
}
