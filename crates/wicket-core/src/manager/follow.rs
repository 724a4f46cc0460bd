//! How a front end reads a session: a [`Follower`] hands out the log after a
//! seq, then each live event from the session's broadcast [`Ring`], with no
//! gap and no duplicate.

use super::*;

/// A broadcast ring that exists only while something listens: a session
/// nobody follows holds none (1,000 idle sessions cost kilobytes each).
pub(super) struct Ring<T> {
    sender: Mutex<Option<broadcast::Sender<T>>>,
    capacity: usize,
}

impl<T: Clone> Ring<T> {
    pub(super) fn new(capacity: usize) -> Ring<T> {
        Ring {
            sender: Mutex::new(None),
            capacity,
        }
    }

    pub(super) fn sender(&self) -> MutexGuard<'_, Option<broadcast::Sender<T>>> {
        wicket_os::sync::lock(&self.sender)
    }

    pub(super) fn subscribe(&self) -> broadcast::Receiver<T> {
        let mut sender = self.sender();
        match sender.as_ref() {
            Some(live) => live.subscribe(),
            None => {
                let (live, receiver) = broadcast::channel(self.capacity);
                *sender = Some(live);
                receiver
            }
        }
    }

    /// Whether anyone listens.
    pub(super) fn listened(&self) -> bool {
        self.sender()
            .as_ref()
            .is_some_and(|live| live.receiver_count() > 0)
    }

    /// Sends what `value` makes, made only when someone listens (every
    /// append of every session passes here).
    pub(super) fn send(&self, value: impl FnOnce() -> T) {
        let mut sender = self.sender();
        if let Some(live) = sender.as_ref()
            && live.send(value()).is_err()
        {
            // No one listens any more: the ring goes until someone does.
            *sender = None;
        }
    }
}

/// One front end's place in a session's events: the log after a seq, then
/// each live event as it is appended, in order, with no gap and no
/// duplicate. A follower that falls more than [`EVENT_BUFFER`] behind
/// catches up from the log. Every front end follows a session through this.
pub struct Follower {
    pub(super) live: broadcast::Receiver<Arc<Event>>,
    pub(super) queue: VecDeque<Event>,
    pub(super) last: u64,
    pub(super) log_path: PathBuf,
    /// A catch-up from the log in flight (after a lag).
    pub(super) reading: Option<tokio::task::JoinHandle<Result<Vec<Event>, ManagerError>>>,
}

impl Follower {
    /// The seq of the last event handed out (or the seq followed from).
    pub fn last_seq(&self) -> u64 {
        self.last
    }

    pub(super) fn queued(&mut self) -> Option<Event> {
        while let Some(event) = self.queue.pop_front() {
            if event.seq > self.last {
                self.last = event.seq;
                return Some(event);
            }
        }
        None
    }

    pub(super) fn caught_up(log_path: &Path, last: u64) -> Result<Vec<Event>, ManagerError> {
        Ok(session::load_log_after(log_path, last)?)
    }

    /// The next event; `None` when the session's stream is gone. Cancel
    /// safe: dropped before it is ready, it loses nothing (a catch-up from
    /// the log in flight is picked up by the next call).
    pub async fn next(&mut self) -> Result<Option<Event>, ManagerError> {
        loop {
            if let Some(reading) = self.reading.as_mut() {
                let read = reading.await;
                self.reading = None;
                let events = read.map_err(|error| {
                    ManagerError::Thread(std::io::Error::other(error.to_string()))
                })??;
                self.queue.extend(events);
            }
            if let Some(event) = self.queued() {
                return Ok(Some(event));
            }
            match self.live.recv().await {
                Ok(event) => self.queue.push_back(Event::clone(&event)),
                Err(RecvError::Lagged(_)) => {
                    let (path, last) = (self.log_path.clone(), self.last);
                    self.reading = Some(tokio::task::spawn_blocking(move || {
                        Self::caught_up(&path, last)
                    }));
                }
                Err(RecvError::Closed) => return Ok(None),
            }
        }
    }

    /// The next event, waiting on this thread (not in an async task).
    pub fn blocking_next(&mut self) -> Result<Option<Event>, ManagerError> {
        loop {
            if let Some(event) = self.queued() {
                return Ok(Some(event));
            }
            match self.live.blocking_recv() {
                Ok(event) => self.queue.push_back(Event::clone(&event)),
                Err(RecvError::Lagged(_)) => {
                    let events = Self::caught_up(&self.log_path, self.last)?;
                    self.queue.extend(events);
                }
                Err(RecvError::Closed) => return Ok(None),
            }
        }
    }
}
