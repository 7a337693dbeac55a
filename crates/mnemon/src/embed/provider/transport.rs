//! The HTTP side of a provider: one JSON `POST` with a timeout, retries with
//! back-off on the failures that pass (429, 5xx, a refused or dropped
//! connection, a timeout), `Retry-After` honoured, a bounded number of
//! requests in flight, and a breaker that remembers a provider that is down
//! so callers that can wait (writes, which are then stored with deferred
//! embedding) do not.

use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use super::spec::ProviderSpec;
use crate::error::{Error, Result};

/// First back-off: 0.5 s, doubled per try (the schedule of
/// [`super::spec::DEFAULT_RETRIES`]).
const FIRST_BACKOFF: Duration = Duration::from_millis(500);
/// The longest wait between tries, also the cap on a `Retry-After` the
/// provider sends: 60 s (a longer wait is better spent failing over to
/// deferred embedding, whose retries go on in the background).
pub(crate) const MAX_WAIT: Duration = Duration::from_secs(60);
/// How long the breaker stays open after the first failed call: 2 s,
/// doubled per failed call up to [`MAX_WAIT`].
const FIRST_COOLDOWN: Duration = Duration::from_secs(2);
/// The most of a response body read: 256 MiB (2048 vectors of 3072
/// components written as JSON text take about 130 MB).
const MAX_BODY: u64 = 256 << 20;
/// The most of an error body quoted in a message.
const QUOTE: usize = 300;

/// A counting semaphore: at most `n` requests in flight per provider.
struct Slots {
    free: Mutex<usize>,
    cv: Condvar,
}

impl Slots {
    fn take(&self) -> SlotGuard<'_> {
        let mut free = self.free.lock();
        while *free == 0 {
            self.cv.wait(&mut free);
        }
        *free -= 1;
        SlotGuard(self)
    }
}

struct SlotGuard<'a>(&'a Slots);

impl Drop for SlotGuard<'_> {
    fn drop(&mut self) {
        *self.0.free.lock() += 1;
        self.0.cv.notify_one();
    }
}

/// What a failed try was.
enum Try {
    /// Worth trying again (after `wait`, when the provider said).
    Again { reason: String, wait: Option<Duration> },
    /// Trying again would fail the same way.
    Stop(Error),
    /// The connection was refused: tried once more at most.
    Refused { reason: String },
}

/// The breaker's state.
#[derive(Default)]
struct Breaker {
    /// Calls that failed in a row (each after its retries).
    failures: u32,
    /// Until when the provider counts as down.
    open_until: Option<Instant>,
}

/// One provider's HTTP client.
pub(crate) struct Transport {
    spec: &'static ProviderSpec,
    agent: ureq::Agent,
    slots: Slots,
    breaker: Mutex<Breaker>,
}

impl Transport {
    pub(crate) fn new(spec: &'static ProviderSpec) -> Transport {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .timeout_global(Some(Duration::from_secs(spec.timeout_s)))
            .http_status_as_error(false)
            .user_agent(concat!("mnemon/", env!("CARGO_PKG_VERSION")))
            .build()
            .into();
        Transport {
            spec,
            agent,
            slots: Slots { free: Mutex::new(spec.in_flight), cv: Condvar::new() },
            breaker: Mutex::default(),
        }
    }

    /// Whether the provider is believed to answer: false from a call that
    /// failed after its retries until the breaker's cool-down ends.
    pub(crate) fn available(&self) -> bool {
        self.breaker.lock().open_until.is_none_or(|t| Instant::now() >= t)
    }

    /// `POST {base}{path}` with JSON `body`; the JSON answer.
    ///
    /// While the breaker is open, one try and no retries, so a caller that
    /// cannot defer (a recall's query) learns at once.
    ///
    /// # Errors
    /// [`Error::ProviderUnavailable`] when every try failed in a way that
    /// passes (429, 5xx, connection refused or dropped, timeout);
    /// [`Error::Embedder`] for an answer that will not change on a retry
    /// (another 4xx, a body that is not JSON), naming the provider and the
    /// status, with the start of the provider's message.
    pub(crate) fn post(&self, path: &str, body: &serde_json::Value) -> Result<serde_json::Value> {
        let url = format!("{}{path}", self.spec.base_url);
        let payload =
            serde_json::to_vec(body).map_err(|e| Error::Embedder(format!("encoding a request: {e}").into()))?;
        let retries = if self.available() { self.spec.retries } else { 0 };
        let mut backoff = FIRST_BACKOFF;
        let mut last = String::new();
        let mut tries = 0;
        for attempt in 0..=retries {
            tries += 1;
            let outcome = {
                let _slot = self.slots.take();
                self.try_once(&url, &payload)
            };
            match outcome {
                Ok(v) => {
                    *self.breaker.lock() = Breaker::default();
                    return Ok(v);
                }
                Err(Try::Stop(e)) => return Err(e),
                Err(Try::Refused { reason }) if attempt >= 1 => {
                    last = reason;
                    break;
                }
                Err(Try::Refused { reason }) => {
                    last = reason;
                    if attempt < retries {
                        std::thread::sleep(FIRST_BACKOFF);
                    }
                }
                Err(Try::Again { reason, wait }) => {
                    last = reason;
                    if attempt < retries {
                        let jitter = 1.0 + 0.25 * rand::random::<f64>();
                        let pause = wait.unwrap_or_else(|| backoff.mul_f64(jitter)).min(MAX_WAIT);
                        std::thread::sleep(pause);
                        backoff = (backoff * 2).min(MAX_WAIT);
                    }
                }
            }
        }
        let mut b = self.breaker.lock();
        b.failures = b.failures.saturating_add(1);
        let cool = FIRST_COOLDOWN.saturating_mul(1 << (b.failures - 1).min(5)).min(MAX_WAIT);
        b.open_until = Some(Instant::now() + cool);
        Err(Error::ProviderUnavailable {
            provider: self.spec.identity(),
            reason: format!("{last} (after {tries} {})", if tries == 1 { "try" } else { "tries" }),
        })
    }

    fn try_once(&self, url: &str, payload: &[u8]) -> std::result::Result<serde_json::Value, Try> {
        let mut req = self.agent.post(url).header("Content-Type", "application/json");
        if let Some(key) = self.spec.api_key() {
            req = req.header("Authorization", &format!("Bearer {key}"));
        }
        let mut resp = match req.send(payload) {
            Ok(r) => r,
            Err(ureq::Error::BadUri(u)) => {
                return Err(Try::Stop(Error::Embedder(
                    format!("provider {}: bad URL {u}", self.spec.identity()).into(),
                )))
            }
            // Nothing listens there: worth one more try (a server
            // restarting), not the whole schedule, so a caller that cannot
            // wait for it learns soon (writes then go to deferred
            // embedding).
            Err(ureq::Error::Io(e)) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
                return Err(Try::Refused { reason: format!("no answer from {url}: connection refused") })
            }
            Err(e) => return Err(Try::Again { reason: format!("no answer from {url}: {e}"), wait: None }),
        };
        let status = resp.status().as_u16();
        let wait = resp.headers().get("retry-after").and_then(|v| v.to_str().ok()).and_then(retry_after);
        let text = match resp.body_mut().with_config().limit(MAX_BODY).read_to_string() {
            Ok(t) => t,
            Err(e) => return Err(Try::Again { reason: format!("answer from {url} cut off: {e}"), wait: None }),
        };
        if (200..300).contains(&status) {
            return serde_json::from_str(&text).map_err(|e| {
                Try::Stop(Error::Embedder(
                    format!(
                        "provider {} answered with a body that is not JSON ({e}): {}",
                        self.spec.identity(),
                        quote(&text)
                    )
                    .into(),
                ))
            });
        }
        let said = quote(&text);
        // 501 and 505 say what the server cannot do, which a retry does not change.
        if matches!(status, 408 | 425 | 429) || (status >= 500 && !matches!(status, 501 | 505)) {
            return Err(Try::Again { reason: format!("{url} answered {status}: {said}"), wait });
        }
        let hint = match status {
            401 | 403 => {
                let var = self.spec.key_env.clone().unwrap_or_else(|| match self.spec.kind {
                    super::spec::ProviderKind::OpenAi => "MNEMON_EMBEDDER_API_KEY or OPENAI_API_KEY".into(),
                    super::spec::ProviderKind::Ollama => "MNEMON_EMBEDDER_API_KEY".into(),
                    super::spec::ProviderKind::Rerank => "MNEMON_RERANKER_API_KEY".into(),
                });
                format!(" (the API key is read from {var})")
            }
            404 => " (check the base URL and the model name)".to_string(),
            _ => String::new(),
        };
        Err(Try::Stop(Error::Embedder(
            format!("provider {} refused the request: {status}{hint}: {said}", self.spec.identity()).into(),
        )))
    }
}

/// The wait a `Retry-After` value asks for: delay seconds, or an HTTP date
/// (RFC 9110 §10.2.3); `None` when it is neither.
pub(crate) fn retry_after(v: &str) -> Option<Duration> {
    let v = v.trim();
    if let Ok(s) = v.parse::<f64>() {
        return (s.is_finite() && s >= 0.0).then(|| Duration::from_secs_f64(s.min(MAX_WAIT.as_secs_f64())));
    }
    let at = chrono::DateTime::parse_from_rfc2822(v).ok()?;
    let secs = (at.with_timezone(&chrono::Utc) - chrono::Utc::now()).num_milliseconds().max(0);
    Some(Duration::from_millis(secs as u64).min(MAX_WAIT))
}

/// The start of a provider's message, on one line, for an error.
fn quote(text: &str) -> String {
    let one: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if one.chars().count() > QUOTE {
        format!("{}…", one.chars().take(QUOTE).collect::<String>())
    } else if one.is_empty() {
        "(empty body)".to_string()
    } else {
        one
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_reads_seconds_and_dates() {
        assert_eq!(retry_after("3"), Some(Duration::from_secs(3)));
        assert_eq!(retry_after("0.5"), Some(Duration::from_millis(500)));
        assert_eq!(retry_after("9999"), Some(MAX_WAIT));
        assert_eq!(retry_after("-1"), None);
        assert_eq!(retry_after("soon"), None);
        let past = "Sun, 06 Nov 1994 08:49:37 GMT";
        assert_eq!(retry_after(past), Some(Duration::ZERO));
        let future = (chrono::Utc::now() + chrono::Duration::seconds(30)).to_rfc2822();
        let d = retry_after(&future).unwrap();
        assert!(d > Duration::from_secs(25) && d <= Duration::from_secs(30), "{d:?}");
    }

    #[test]
    fn quotes_are_short_and_on_one_line() {
        assert_eq!(quote("a\n  b"), "a b");
        assert_eq!(quote(""), "(empty body)");
        assert_eq!(quote(&"x".repeat(400)).chars().count(), QUOTE + 1);
    }
}
