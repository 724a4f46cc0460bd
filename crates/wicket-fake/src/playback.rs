//! Streams a response body event by event, with the timing and the endings
//! that the broken-stream steps script.

use std::collections::VecDeque;
use std::io;
use std::time::Duration;

use axum::body::Body;
use axum::http::StatusCode;
use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;

use crate::steps::FakeReply;

/// What happens once the scripted events are written.
pub(crate) enum Ending {
    /// The body ends cleanly with its terminating chunk.
    Finish,
    /// The connection is dropped mid-body.
    Abort,
    /// Nothing more is sent and the connection stays open.
    Hang,
}

/// A streamed SSE response: its events, already framed, and how to send them.
pub(crate) struct Playback {
    pub events: Vec<String>,
    /// Slept before every event.
    pub delay: Duration,
    /// When set and not 0, each event goes out in pieces of this many bytes.
    pub byte_pieces: Option<usize>,
    pub ending: Ending,
}

/// One step of writing the body.
enum Action {
    Wait(Duration),
    Send(Bytes),
    Abort,
    Hang,
}

impl Playback {
    /// Sends all of `events` promptly and ends cleanly, writing in the
    /// reply's byte pieces.
    pub(crate) fn new(events: Vec<String>, reply: &FakeReply) -> Playback {
        Playback {
            events,
            delay: Duration::ZERO,
            byte_pieces: reply.byte_pieces,
            ending: Ending::Finish,
        }
    }

    /// Keeps only the first `count` events, then ends as `ending` says.
    pub(crate) fn first(mut self, count: usize, ending: Ending) -> Playback {
        self.events.truncate(count);
        Playback { ending, ..self }
    }

    /// The body as the script of actions that produce it.
    fn actions(self) -> VecDeque<Action> {
        let mut actions = VecDeque::new();
        for event in self.events {
            if !self.delay.is_zero() {
                actions.push_back(Action::Wait(self.delay));
            }
            let event = Bytes::from(event);
            actions.extend(pieces(&event, self.byte_pieces).map(Action::Send));
        }
        match self.ending {
            Ending::Finish => {}
            Ending::Abort => actions.push_back(Action::Abort),
            Ending::Hang => actions.push_back(Action::Hang),
        }
        actions
    }
}

impl IntoResponse for Playback {
    fn into_response(self) -> Response {
        let body = Body::from_stream(futures_util::stream::unfold(self.actions(), next_frame));
        let headers = [
            (CONTENT_TYPE, "text/event-stream"),
            (CACHE_CONTROL, "no-cache"),
        ];
        (StatusCode::OK, headers, body).into_response()
    }
}

/// The body's next frame. An error frame makes hyper drop the connection
/// without the terminating chunk, which is how `Abort` cuts the stream.
async fn next_frame(
    mut actions: VecDeque<Action>,
) -> Option<(io::Result<Bytes>, VecDeque<Action>)> {
    loop {
        match actions.pop_front()? {
            Action::Wait(delay) => tokio::time::sleep(delay).await,
            Action::Send(bytes) => {
                let_hyper_flush().await;
                return Some((Ok(bytes), actions));
            }
            Action::Abort => {
                let_hyper_flush().await;
                let cut = io::Error::other("wicket-fake: connection cut as scripted");
                return Some((Err(cut), actions));
            }
            Action::Hang => std::future::pending::<()>().await,
        }
    }
}

/// Hyper gathers frames that are ready at once into one write, and drops
/// what it has not written yet when the body fails. Returning `Pending`
/// once makes it flush first, so every piece is its own write and the
/// events before an abort reach the client.
async fn let_hyper_flush() {
    tokio::task::yield_now().await;
}

/// `event` cut into pieces of `size` bytes, or whole when `size` is unset
/// or 0. Pieces may split a UTF-8 character; that is their purpose.
fn pieces(event: &Bytes, size: Option<usize>) -> impl Iterator<Item = Bytes> + '_ {
    let size = size.filter(|&size| size > 0).unwrap_or(event.len().max(1));
    (0..event.len())
        .step_by(size)
        .map(move |at| event.slice(at..event.len().min(at + size)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_cut_bytes_and_keep_everything() {
        let event = Bytes::from("data: é\n\n");
        let cut: Vec<Bytes> = pieces(&event, Some(7)).collect();
        assert_eq!(cut, [&b"data: \xc3"[..], &b"\xa9\n\n"[..]]);
    }
}
