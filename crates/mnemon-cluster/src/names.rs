//! Names in NATS: every namespace maps to one token that is a valid subject
//! token, key-value key and stream-name part, and every deployment has a
//! prefix so several can share one NATS cluster.

use mnemon::Namespace;
use mnemon::{Error, Result};

/// The names of one deployment (one prefix) in NATS.
#[derive(Clone, Debug)]
pub(crate) struct Names {
    prefix: String,
}

impl Names {
    /// Validates the prefix: 1..=32 characters of `[a-z0-9]` (it becomes
    /// part of bucket, stream and subject names, and of file names on the
    /// NATS servers).
    pub(crate) fn new(prefix: &str) -> Result<Names> {
        if prefix.is_empty() || prefix.len() > 32 {
            return Err(Error::invalid("prefix", "1 to 32 characters"));
        }
        if let Some(c) = prefix.chars().find(|c| !(c.is_ascii_lowercase() || c.is_ascii_digit())) {
            return Err(Error::invalid("prefix", format!("character {c:?} not allowed; use [a-z0-9]")));
        }
        Ok(Names { prefix: prefix.to_string() })
    }

    /// The key-value bucket of writer leases (key: namespace token).
    pub(crate) fn lease_bucket(&self) -> String {
        format!("{}-leases", self.prefix)
    }

    /// The key-value bucket naming each namespace's current log generation.
    pub(crate) fn directory_bucket(&self) -> String {
        format!("{}-logs", self.prefix)
    }

    /// The key-value bucket of an encrypted cluster's data keys (key:
    /// namespace token; see `keys.rs`).
    pub(crate) fn key_bucket(&self) -> String {
        format!("{}-keys", self.prefix)
    }

    /// The key-value bucket of live daemons (key: daemon id).
    pub(crate) fn daemon_bucket(&self) -> String {
        format!("{}-daemons", self.prefix)
    }

    /// The stream holding generation `generation` of the namespace's log.
    pub(crate) fn stream(&self, token: &str, generation: u64) -> String {
        format!("{}_{token}_G{generation}", self.prefix.to_ascii_uppercase())
    }

    /// The one subject of that stream.
    pub(crate) fn subject(&self, token: &str, generation: u64) -> String {
        format!("{}.log.{token}.g{generation}", self.prefix)
    }

    /// The subject on which daemon `daemon` answers forwarded calls.
    pub(crate) fn rpc(&self, daemon: &str) -> String {
        format!("{}.rpc.{daemon}", self.prefix)
    }

    /// The subject clients call (a queue group: any one daemon answers).
    pub(crate) fn door(&self) -> String {
        format!("{}.call", self.prefix)
    }

    /// The subject on which one daemon takes client calls.
    pub(crate) fn door_of(&self, daemon: &str) -> String {
        format!("{}.call.{daemon}", self.prefix)
    }

    /// The queue group of the daemons on the client subject.
    pub(crate) fn door_group(&self) -> String {
        format!("{}-daemons", self.prefix)
    }

    /// The subject on which every daemon hears that a namespace's data key
    /// was shredded (payload: the namespace token).
    pub(crate) fn shred_notice(&self) -> String {
        format!("{}.shred", self.prefix)
    }

    /// The subject on which every daemon hears erasure notices.
    pub(crate) fn scrub(&self) -> String {
        format!("{}.scrub", self.prefix)
    }
}

/// The namespace as one token of `[A-Za-z0-9_-]`, at most 64 bytes: letters,
/// digits and `-` stay, every other byte (`_ . : @`) becomes `_` and two
/// upper-case hex digits; a result longer than [`MAX_TOKEN`] is replaced by
/// `_H` and the first 16 bytes of the namespace's SHA-256 in hex (escapes
/// never produce `_H`, so the forms cannot collide). The token names a
/// stream, so it must stay well under file-name limits on the NATS servers.
pub(crate) fn token(ns: &Namespace) -> String {
    let mut out = String::with_capacity(ns.as_str().len());
    for b in ns.as_str().bytes() {
        if b.is_ascii_alphanumeric() || b == b'-' {
            out.push(char::from(b));
        } else {
            out.push('_');
            out.push_str(&format!("{b:02X}"));
        }
    }
    if out.len() > MAX_TOKEN {
        use sha2::Digest;
        let digest = sha2::Sha256::digest(ns.as_str().as_bytes());
        out = format!("_H{}", hex::encode(&digest[..16]));
    }
    out
}

/// Longest escaped token kept as it is.
pub(crate) const MAX_TOKEN: usize = 64;

/// Validates a daemon id: 1..=64 characters of `[A-Za-z0-9_-]` (it is a
/// subject token and a key-value key).
pub(crate) fn check_daemon_id(id: &str) -> Result<()> {
    if id.is_empty() || id.len() > 64 {
        return Err(Error::invalid("daemon_id", "1 to 64 characters"));
    }
    if let Some(c) = id.chars().find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-'))) {
        return Err(Error::invalid("daemon_id", format!("character {c:?} not allowed; use [A-Za-z0-9_-]")));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_distinct_and_safe() {
        let names = ["u1", "a.b", "a_2E", "a_2e", "user@example.com", "x:y-z_w", "A.B.C", "a-b"];
        let long = "x.".repeat(60);
        let tokens: Vec<String> =
            names.iter().copied().chain([long.as_str()]).map(|s| token(&Namespace::new(s).unwrap())).collect();
        for t in &tokens {
            assert!(t.len() <= MAX_TOKEN + 2, "{t}");
            assert!(t.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-'), "{t}");
        }
        let distinct: std::collections::HashSet<&String> = tokens.iter().collect();
        assert_eq!(distinct.len(), tokens.len());
        assert_eq!(tokens[1], "a_2Eb");
        assert!(tokens[8].starts_with("_H"));
    }

    #[test]
    fn names_reject_bad_prefixes_and_ids() {
        assert!(Names::new("mnemon").is_ok());
        assert!(Names::new("").is_err());
        assert!(Names::new("Mnemon").is_err());
        assert!(Names::new("a.b").is_err());
        assert!(check_daemon_id("d-1_a").is_ok());
        assert!(check_daemon_id("d.1").is_err());
        assert!(check_daemon_id("").is_err());
    }
}
