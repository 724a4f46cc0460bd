//! The session's writes as a turn makes them: failures recorded, never returned.

use wicket_protocol::EventBody;

use crate::{Meta, Session};

/// The session's writes as a turn makes them. Every write of a session
/// records its first failure, and [`Session::take_failure`] hands it to the
/// turn, which ends on it at its next boundary: that is the one way a turn
/// learns a write failed. These methods therefore return nothing, so that
/// turn code holds no `Result` it could drop; callers outside a turn (a
/// front end, `wicket rewind`) use the `Session` methods and their `Result`.
pub struct Recorded<'a>(pub(crate) &'a Session);

impl Recorded<'_> {
    /// Appends `body`.
    pub fn append(&self, body: EventBody) {
        // Recorded in the session: the turn ends on it at its next boundary.
        let _ = self.0.append(body);
    }

    /// Changes meta.json.
    pub fn update_meta(&self, change: impl FnOnce(&mut Meta)) {
        // Recorded in the session: the turn ends on it at its next boundary.
        let _ = self.0.update_meta(change);
    }

    /// Makes every appended event durable.
    pub fn sync(&self) {
        // Recorded in the session: the turn ends on it at its next boundary.
        let _ = self.0.sync();
    }
}
