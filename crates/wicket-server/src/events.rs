//! The session's events: the log so far in one response, and the live
//! stream (server-sent events) that replays from a seq and then follows.

use std::convert::Infallible;
use std::sync::Arc;

use axum::extract::{Path as UrlPath, Query, State};
use axum::http::{HeaderMap, header};
use axum::response::IntoResponse;
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use futures_util::Stream;
use serde::Deserialize;
use tokio::sync::broadcast::error::RecvError;
use wicket_core::manager::Manager;
use wicket_protocol::Event;

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
    UrlPath(id): UrlPath<String>,
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
    let body = serde_json::to_vec(&Log { events }).unwrap_or_default();
    Ok(([(header::CONTENT_TYPE, "application/json")], body))
}

fn sse_event(event: &Event) -> SseEvent {
    SseEvent::default()
        .id(event.seq.to_string())
        .data(serde_json::to_string(event).unwrap_or_default())
}

/// Replays the log after `after` (or `Last-Event-ID`), then streams live.
pub async fn events(
    State(server): State<Shared>,
    UrlPath(id): UrlPath<String>,
    Query(query): Query<After>,
    headers: HeaderMap,
) -> Result<Sse<impl Stream<Item = Result<SseEvent, Infallible>>>, ApiError> {
    let resume = headers
        .get("last-event-id")
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.parse::<u64>().ok());
    let after = resume.or(query.after).unwrap_or(0);
    // Subscribe first, then read the log: nothing falls between the two.
    let (live, backlog) = {
        let id = id.clone();
        blocking(&server.manager, move |manager| {
            let live = manager.subscribe(&id)?;
            Ok((live, manager.events_after(&id, after)?))
        })
        .await?
    };
    let state = Follow {
        queue: backlog.into(),
        live,
        last: after,
        manager: server.manager.clone(),
        id,
    };
    let stream = futures_util::stream::unfold(state, |mut follow| async move {
        let event = follow.next().await?;
        Some((Ok(sse_event(&event)), follow))
    });
    Ok(Sse::new(stream).keep_alive(KeepAlive::default()))
}

/// One subscriber's place in a session's events.
struct Follow {
    queue: std::collections::VecDeque<Event>,
    live: tokio::sync::broadcast::Receiver<Event>,
    last: u64,
    manager: Arc<Manager>,
    id: String,
}

impl Follow {
    /// The next event after `last`, from the backlog, live, or (after
    /// falling behind) the log.
    async fn next(&mut self) -> Option<Event> {
        loop {
            if let Some(event) = self.queue.pop_front() {
                if event.seq <= self.last {
                    continue;
                }
                self.last = event.seq;
                return Some(event);
            }
            match self.live.recv().await {
                Ok(event) => self.queue.push_back(event),
                Err(RecvError::Lagged(_)) => {
                    let (id, last) = (self.id.clone(), self.last);
                    let caught_up = blocking(&self.manager, move |manager| {
                        manager.events_after(&id, last)
                    })
                    .await
                    .unwrap_or_default();
                    self.queue.extend(caught_up);
                }
                Err(RecvError::Closed) => return None,
            }
        }
    }
}
