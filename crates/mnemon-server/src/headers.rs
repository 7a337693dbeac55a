//! Request headers the HTTP door judges itself: the `Authorization`
//! credentials (scheme matched without regard to case, RFC 9110 §11.1)
//! and the browser's `Origin` (DNS-rebinding defence the MCP streamable
//! HTTP transport requires).

use hyper::header::HeaderValue;

/// The token of an `Authorization: Bearer TOKEN` header: the scheme in any
/// case, then one or more spaces or tabs. `None` for another scheme, an
/// empty token, or a value that is not visible ASCII.
pub(crate) fn bearer_token(value: &HeaderValue) -> Option<&str> {
    let v = value.to_str().ok()?;
    let (scheme, rest) = v.split_once([' ', '\t'])?;
    let token = rest.trim_matches([' ', '\t']);
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// A web origin as a browser sends it (RFC 6454): scheme, host and port,
/// lower-cased, the port filled in from the scheme when absent.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Origin {
    scheme: String,
    host: String,
    port: u16,
}

impl Origin {
    /// Parses `scheme://host[:port]` (a trailing `/` is tolerated);
    /// `None` for anything else, `null` included (opaque origins).
    pub(crate) fn parse(s: &str) -> Option<Origin> {
        let s = s.trim().trim_end_matches('/');
        let (scheme, rest) = s.split_once("://")?;
        let scheme = scheme.to_ascii_lowercase();
        let default_port = match scheme.as_str() {
            "http" => 80,
            "https" => 443,
            _ => return None,
        };
        if rest.is_empty() || rest.contains(['/', '?', '#', '@']) {
            return None;
        }
        let (host, port) = match rest.strip_prefix('[') {
            Some(v6) => {
                let (h, after) = v6.split_once(']')?;
                (format!("[{h}]"), after.strip_prefix(':'))
            }
            None => match rest.rsplit_once(':') {
                Some((h, p)) => (h.to_string(), Some(p)),
                None => (rest.to_string(), None),
            },
        };
        let port = match port {
            Some(p) => p.parse().ok()?,
            None => default_port,
        };
        if host.is_empty() || host == "[]" {
            return None;
        }
        Some(Origin { scheme, host: host.to_ascii_lowercase(), port })
    }

    /// True for a page served from this machine: `localhost`, any
    /// 127.0.0.0/8 address or `[::1]`, on any port.
    pub(crate) fn is_loopback(&self) -> bool {
        let bare = self.host.trim_start_matches('[').trim_end_matches(']');
        self.host == "localhost" || bare.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
    }
}

/// Whether a request with these `Origin` header values may reach `/mcp`:
/// no header (not a browser), or one loopback or listed origin. Several
/// `Origin` headers, or one that does not parse (`null` among them), are
/// refused.
pub(crate) fn origin_allowed<'a>(mut values: impl Iterator<Item = &'a HeaderValue>, allowed: &[Origin]) -> bool {
    let Some(first) = values.next() else { return true };
    if values.next().is_some() {
        return false;
    }
    match first.to_str().ok().and_then(Origin::parse) {
        Some(o) => o.is_loopback() || allowed.contains(&o),
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_scheme_is_case_insensitive() {
        for (v, t) in [
            ("Bearer abc", Some("abc")),
            ("bearer abc", Some("abc")),
            ("BEARER  abc ", Some("abc")),
            ("Basic abc", None),
            ("Bearer ", None),
            ("abc", None),
        ] {
            assert_eq!(bearer_token(&HeaderValue::from_static(v)), t, "{v}");
        }
    }

    #[test]
    fn origins() {
        let listed = [Origin::parse("https://app.example.com").unwrap()];
        let ok = |v: &'static str| origin_allowed([HeaderValue::from_static(v)].iter(), &listed);
        assert!(origin_allowed(std::iter::empty(), &listed));
        for v in ["http://localhost:3000", "http://127.0.0.1", "http://[::1]:8080", "https://APP.example.com:443"] {
            assert!(ok(v), "{v}");
        }
        for v in ["http://evil.example", "null", "https://app.example.com:8443", "file://", "http://127.0.0.1.evil.io"]
        {
            assert!(!ok(v), "{v}");
        }
    }
}
