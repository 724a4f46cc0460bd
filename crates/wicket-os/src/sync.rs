//! Locks whose holder panicked are taken as they are. Every lock here
//! guards data that a panic cannot leave half-changed in a way that
//! matters (a queue, a counter, a cache, a writer that cuts a torn line),
//! and one panicked turn must not stop every other session: a panic is
//! caught at the turn's edge and reported there, not again at each lock.

use std::sync::{Condvar, Mutex, MutexGuard};

/// `mutex`, locked.
pub fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Waits on `condvar` with `guard`, and takes the lock back.
pub fn wait<'a, T>(condvar: &Condvar, guard: MutexGuard<'a, T>) -> MutexGuard<'a, T> {
    condvar
        .wait(guard)
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Waits on `condvar` with `guard` for at most `timeout`, and takes the lock back.
pub fn wait_timeout<'a, T>(
    condvar: &Condvar,
    guard: MutexGuard<'a, T>,
    timeout: std::time::Duration,
) -> MutexGuard<'a, T> {
    match condvar.wait_timeout(guard, timeout) {
        Ok((guard, _)) => guard,
        Err(poisoned) => poisoned.into_inner().0,
    }
}

/// `mutex`'s value, the mutex gone.
pub fn into_inner<T>(mutex: Mutex<T>) -> T {
    mutex
        .into_inner()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    #[test]
    fn a_lock_whose_holder_panicked_is_taken_as_it_is() {
        let shared = std::sync::Arc::new(Mutex::new(1));
        let held = shared.clone();
        let panicked = std::thread::spawn(move || {
            let _guard = held.lock();
            panic!("on purpose");
        })
        .join();
        assert!(panicked.is_err() && shared.is_poisoned());
        *super::lock(&shared) += 1;
        assert_eq!(*super::lock(&shared), 2);
    }
}
