//! Retries: exponential backoff with jitter, or the server's `Retry-After`.

use std::time::Duration;

use crate::{ChatClient, ChatError, ChatFuture, ClientConfig, Completion, Request, StreamEvent};

/// How often and how patiently a failed request is repeated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Requests in all, the first one included.
    pub max_attempts: u32,
    /// The wait before the first retry; it doubles each time.
    pub base_delay: Duration,
    /// No computed wait is longer.
    pub max_delay: Duration,
}

/// The longest `Retry-After` we honour; a server asking for more gets this.
pub(crate) const MAX_RETRY_AFTER: Duration = Duration::from_secs(300);

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_attempts: 5,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(30),
        }
    }
}

impl RetryPolicy {
    /// The wait after failed attempt number `attempt` (1-based): the
    /// server's `Retry-After` when it sent one, else `base * 2^(attempt-1)`
    /// capped at `max_delay`, scaled by a random factor in [0.5, 1) so many
    /// clients do not retry in step.
    pub fn delay(&self, attempt: u32, retry_after: Option<Duration>) -> Duration {
        if let Some(wait) = retry_after {
            return wait.min(MAX_RETRY_AFTER);
        }
        let doubling = 2u32.saturating_pow(attempt.saturating_sub(1));
        let full = self.base_delay.saturating_mul(doubling).min(self.max_delay);
        full.mul_f64(0.5 + fastrand::f64() * 0.5)
    }
}

/// One request to a provider, without retries: all a provider that goes
/// over HTTP writes for itself ([`Retried`] makes it a [`ChatClient`]).
pub(crate) trait Attempt: Send + Sync {
    fn attempt(
        &self,
        req: &Request,
        on_event: &mut (dyn FnMut(StreamEvent) + Send),
    ) -> impl Future<Output = Result<Completion, ChatError>> + Send;
}

/// A provider's attempts with the retry policy around them: the one
/// [`ChatClient`] of every provider that goes over HTTP.
pub(crate) struct Retried<A> {
    model: String,
    retry: RetryPolicy,
    attempts: A,
}

impl<A: Attempt> Retried<A> {
    /// `attempts` under the model string `model`, retried as `config` says.
    pub(crate) fn new(model: &str, config: &ClientConfig, attempts: A) -> Retried<A> {
        Retried {
            model: model.to_string(),
            retry: config.retry.clone(),
            attempts,
        }
    }
}

impl<A: Attempt> ChatClient for Retried<A> {
    fn model(&self) -> &str {
        &self.model
    }

    fn complete<'a>(
        &'a self,
        req: &'a Request,
        on_event: &'a mut (dyn FnMut(StreamEvent) + Send),
    ) -> ChatFuture<'a> {
        Box::pin(retrying(&self.retry, &self.attempts, req, on_event))
    }
}

/// Runs `client`'s attempts until one succeeds, an error is final, or the
/// policy's attempts are spent. Each retry is announced on `on_event` before
/// the wait.
pub(crate) async fn retrying(
    policy: &RetryPolicy,
    client: &impl Attempt,
    req: &Request,
    on_event: &mut (dyn FnMut(StreamEvent) + Send),
) -> Result<Completion, ChatError> {
    let mut attempt = 1;
    loop {
        match client.attempt(req, &mut *on_event).await {
            Ok(mut reply) => {
                reply.attempts = attempt;
                return Ok(reply);
            }
            Err(error) if error.is_retryable() && attempt < policy.max_attempts => {
                let delay = policy.delay(attempt, error.retry_after);
                attempt += 1;
                on_event(StreamEvent::Retry {
                    attempt,
                    delay_ms: u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
                    reason: error.message,
                });
                tokio::time::sleep(delay).await;
            }
            Err(mut error) => {
                if attempt > 1 {
                    error.message = format!("{} (after {attempt} attempts)", error.message);
                }
                return Err(error);
            }
        }
    }
}

/// `Retry-After` as seconds (`"2"`, `"0.5"`) or OpenAI's `retry-after-ms`;
/// an HTTP date is left to the backoff.
pub(crate) fn parse_retry_after(seconds: Option<&str>, millis: Option<&str>) -> Option<Duration> {
    if let Some(ms) = millis.and_then(|value| value.trim().parse::<f64>().ok()) {
        return Duration::try_from_secs_f64(ms / 1000.0).ok();
    }
    let seconds = seconds?.trim().parse::<f64>().ok()?;
    Duration::try_from_secs_f64(seconds).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_with_jitter_and_stops_at_the_cap() {
        let policy = RetryPolicy {
            max_attempts: 10,
            base_delay: Duration::from_millis(100),
            max_delay: Duration::from_millis(1000),
        };
        for _ in 0..200 {
            let first = policy.delay(1, None);
            assert!(first >= Duration::from_millis(50) && first < Duration::from_millis(100));
            let third = policy.delay(3, None);
            assert!(third >= Duration::from_millis(200) && third < Duration::from_millis(400));
            let late = policy.delay(30, None);
            assert!(late >= Duration::from_millis(500) && late < Duration::from_millis(1000));
        }
    }

    #[test]
    fn retry_after_wins_and_is_capped() {
        let policy = RetryPolicy::default();
        assert_eq!(
            policy.delay(1, Some(Duration::from_secs(7))),
            Duration::from_secs(7)
        );
        assert_eq!(
            policy.delay(1, Some(Duration::from_secs(9999))),
            MAX_RETRY_AFTER
        );
    }

    #[test]
    fn retry_after_forms() {
        assert_eq!(
            parse_retry_after(Some("2"), None),
            Some(Duration::from_secs(2))
        );
        assert_eq!(
            parse_retry_after(Some("0.25"), None),
            Some(Duration::from_millis(250))
        );
        assert_eq!(
            parse_retry_after(Some("2"), Some("20")),
            Some(Duration::from_millis(20))
        );
        assert_eq!(
            parse_retry_after(Some("Wed, 21 Oct 2026 07:28:00 GMT"), None),
            None
        );
        assert_eq!(parse_retry_after(Some("-1"), None), None);
        assert_eq!(parse_retry_after(None, None), None);
    }
}
