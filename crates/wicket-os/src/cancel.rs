//! [`Cancel`]: a signal shared between a turn and what it is running.

use std::sync::{Arc, Mutex};

type Listener = Box<dyn Fn() + Send + Sync>;

/// A cancel signal shared between a turn and the call it is running.
#[derive(Clone, Default)]
pub struct Cancel {
    inner: Arc<Mutex<CancelState>>,
}

#[derive(Default)]
struct CancelState {
    cancelled: bool,
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
        if let Ok(mut state) = self.inner.lock() {
            state.cancelled = true;
            for (_, listener) in &state.listeners {
                listener();
            }
        }
    }

    /// Whether [`Cancel::cancel`] was called.
    pub fn is_cancelled(&self) -> bool {
        self.inner
            .lock()
            .map(|state| state.cancelled)
            .unwrap_or(true)
    }

    /// Calls `listener` on cancel (at once when already cancelled); returns an id for [`Cancel::remove`].
    pub fn on_cancel(&self, listener: Listener) -> u64 {
        let Ok(mut state) = self.inner.lock() else {
            return 0;
        };
        if state.cancelled {
            listener();
        }
        state.next_id += 1;
        let id = state.next_id;
        state.listeners.push((id, listener));
        id
    }

    /// Removes a listener.
    pub fn remove(&self, id: u64) {
        if let Ok(mut state) = self.inner.lock() {
            state
                .listeners
                .retain(|(listener_id, _)| *listener_id != id);
        }
    }
}
