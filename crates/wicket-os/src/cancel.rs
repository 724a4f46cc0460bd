//! [`Cancel`]: a signal shared between a turn and what it is running.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

type Listener = Box<dyn Fn() + Send + Sync>;

/// A cancel signal shared between a turn and the call it is running.
#[derive(Clone, Default)]
pub struct Cancel {
    inner: Arc<Shared>,
}

#[derive(Default)]
struct Shared {
    /// Read without the lock: a search asks once per file.
    cancelled: AtomicBool,
    state: Mutex<CancelState>,
}

#[derive(Default)]
struct CancelState {
    next_id: u64,
    listeners: Vec<(u64, Listener)>,
}

impl std::fmt::Debug for Cancel {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Cancel")
            .field("cancelled", &self.is_cancelled())
            .finish()
    }
}

impl Cancel {
    /// Cancels, calling every listener.
    pub fn cancel(&self) {
        if let Ok(state) = self.inner.state.lock() {
            self.inner.cancelled.store(true, Ordering::SeqCst);
            for (_, listener) in &state.listeners {
                listener();
            }
        }
    }

    /// Whether [`Cancel::cancel`] was called.
    pub fn is_cancelled(&self) -> bool {
        self.inner.cancelled.load(Ordering::SeqCst)
    }

    /// Calls `listener` on cancel (at once when already cancelled); returns an id for [`Cancel::remove`].
    pub fn on_cancel(&self, listener: Listener) -> u64 {
        let Ok(mut state) = self.inner.state.lock() else {
            return 0;
        };
        if self.inner.cancelled.load(Ordering::SeqCst) {
            listener();
        }
        state.next_id += 1;
        let id = state.next_id;
        state.listeners.push((id, listener));
        id
    }

    /// A cancel of its own that cancelling this one cancels too (a
    /// sub-task's: cancelling it alone leaves this one going); the link
    /// goes when the [`Link`] drops.
    pub fn linked(&self) -> (Cancel, Link) {
        let child = Cancel::default();
        let inner = child.clone();
        let id = self.on_cancel(Box::new(move || inner.cancel()));
        let link = Link {
            parent: self.clone(),
            id,
        };
        (child, link)
    }

    /// Removes a listener.
    pub fn remove(&self, id: u64) {
        if let Ok(mut state) = self.inner.state.lock() {
            state
                .listeners
                .retain(|(listener_id, _)| *listener_id != id);
        }
    }
}

/// A [`Cancel::linked`] cancel's tie to the one it follows.
pub struct Link {
    parent: Cancel,
    id: u64,
}

impl Drop for Link {
    fn drop(&mut self) {
        self.parent.remove(self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_linked_cancel_follows_its_parent_but_not_the_other_way() {
        let parent = Cancel::default();
        let (child, link) = parent.linked();
        child.cancel();
        assert!(!parent.is_cancelled(), "a child's cancel stays its own");
        let (second, _link) = parent.linked();
        parent.cancel();
        assert!(
            second.is_cancelled(),
            "the parent's cancel reaches its children"
        );
        drop(link);
        let late = Cancel::default();
        let (already, _) = {
            late.cancel();
            late.linked()
        };
        assert!(
            already.is_cancelled(),
            "linked to a cancelled one: cancelled at once"
        );
    }
}
