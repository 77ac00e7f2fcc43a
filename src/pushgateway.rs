//! `--pushgateway URL`: pushes a run's metrics to a Prometheus Pushgateway, the convention for
//! batch jobs. `PUT {URL}/metrics/job/{job}/{label}/{value}…` replaces that group's metrics,
//! so each run's push stands for the whole of that run.
//!
//! The Pushgateway is not a cluster or AWS API, so the push does not go through the read-only
//! guard. What keeps it narrow instead: the request goes to the scheme and host given and no
//! other (the URL is built from them; redirects are not followed; no proxy is read from the
//! environment), it carries only the metrics, and it is bounded by a timeout.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use http::uri::{Authority, Scheme};
use http::{Request, StatusCode, Uri, header};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Bytes;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::{Connect, HttpConnector};
use hyper_util::rt::TokioExecutor;
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};

/// Characters of a grouping value sent as they are; everything else is percent-encoded
/// (the unreserved characters of RFC 3986).
const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// How much of an error response is kept for the warning.
const ERROR_BODY_LIMIT: usize = 4096;

/// A Pushgateway's base URL, checked when the option is parsed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Gateway {
    scheme: Scheme,
    authority: Authority,
    /// A path prefix (a gateway behind a reverse proxy), without the trailing slash.
    prefix: String,
}

impl Gateway {
    /// `http://host:9091` or `https://host/prefix`. Credentials, queries and fragments are
    /// refused: karpdoctor would not send them as the URL suggests.
    pub fn parse(url: &str) -> Result<Gateway, String> {
        if url.contains('#') {
            return Err(format!("{url:?}: a Pushgateway URL has no #fragment"));
        }
        let uri: Uri = url
            .parse()
            .map_err(|e| format!("{url:?} is not a URL: {e}"))?;
        let scheme = match uri.scheme_str() {
            Some(s) if s.eq_ignore_ascii_case("http") => Scheme::HTTP,
            Some(s) if s.eq_ignore_ascii_case("https") => Scheme::HTTPS,
            _ => return Err(format!("{url:?}: expected an http:// or https:// URL")),
        };
        let authority = uri
            .authority()
            .filter(|a| !a.host().is_empty())
            .ok_or_else(|| format!("{url:?}: the URL names no host"))?
            .clone();
        if authority.as_str().contains('@') {
            return Err(format!("{url:?}: credentials in the URL are not supported"));
        }
        if uri.query().is_some() {
            return Err(format!("{url:?}: a Pushgateway URL has no ?query"));
        }
        Ok(Gateway {
            scheme,
            authority,
            prefix: uri.path().trim_end_matches('/').to_string(),
        })
    }

    /// The URL of one group: the job, then each grouping label and its value.
    pub fn group_url(&self, job: &str, grouping: &[(&str, &str)]) -> Result<Uri, String> {
        let mut url = format!(
            "{}://{}{}/metrics/{}",
            self.scheme,
            self.authority,
            self.prefix,
            segment("job", job)
        );
        for (label, value) in grouping {
            url.push('/');
            url.push_str(&segment(label, value));
        }
        let uri: Uri = url
            .parse()
            .map_err(|e| format!("cannot build the push URL {url:?}: {e}"))?;
        // The path is encoded, so it cannot move the request elsewhere; say so in code too.
        if uri.authority() != Some(&self.authority) || uri.scheme() != Some(&self.scheme) {
            return Err(format!("the push URL {url:?} leaves {self}"));
        }
        Ok(uri)
    }
}

impl fmt::Display for Gateway {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}://{}{}", self.scheme, self.authority, self.prefix)
    }
}

/// `label/value`, with the Pushgateway's `label@base64/…` form for a value it could not read
/// otherwise: an empty one, or one with a slash (even encoded, a slash splits the path).
fn segment(label: &str, value: &str) -> String {
    if value.is_empty() {
        format!("{label}@base64/=")
    } else if value.contains('/') {
        let encoded = base64::engine::general_purpose::URL_SAFE.encode(value);
        format!("{label}@base64/{encoded}")
    } else {
        format!("{label}/{}", utf8_percent_encode(value, SEGMENT))
    }
}

/// One push: replaces the group's metrics with `body`. Every failure (unreachable, TLS,
/// timeout, a refusal) is an `Err` with a one-line reason.
pub async fn push(
    gateway: &Gateway,
    job: &str,
    grouping: &[(&str, &str)],
    content_type: &str,
    body: String,
    timeout: Duration,
) -> Result<(), String> {
    let url = gateway.group_url(job, grouping)?;
    let request = Request::put(url)
        .header(header::CONTENT_TYPE, content_type)
        .header(header::USER_AGENT, format!("karpdoctor/{}", crate::VERSION))
        .body(Full::new(Bytes::from(body)))
        .map_err(|e| format!("cannot build the request: {e}"))?;
    let (status, text) =
        tokio::time::timeout(timeout, send(gateway.scheme == Scheme::HTTPS, request))
            .await
            .map_err(|_| format!("no answer within {}s", timeout.as_secs_f64()))??;
    if status.is_success() {
        return Ok(());
    }
    let mut reason = format!("the Pushgateway answered {status}");
    if status.is_redirection() {
        reason.push_str(" (redirects are not followed)");
    }
    if let Some(line) = text.lines().map(str::trim).find(|l| !l.is_empty()) {
        reason.push_str(": ");
        reason.push_str(line);
    }
    Err(reason)
}

async fn send(tls: bool, request: Request<Full<Bytes>>) -> Result<(StatusCode, String), String> {
    let mut http = HttpConnector::new();
    if !tls {
        return exchange(http, request).await;
    }
    http.enforce_http(false);
    // The provider kube and the AWS SDK already use, named so no process default is needed.
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let https = hyper_rustls::HttpsConnectorBuilder::new()
        .with_provider_and_native_roots(provider)
        .map_err(|e| format!("cannot set up TLS: {e}"))?
        .https_only()
        .enable_http1()
        .wrap_connector(http);
    exchange(https, request).await
}

async fn exchange<C>(
    connector: C,
    request: Request<Full<Bytes>>,
) -> Result<(StatusCode, String), String>
where
    C: Connect + Clone + Send + Sync + 'static,
{
    // One request: no idle connection is kept for later.
    let client: Client<C, Full<Bytes>> = Client::builder(TokioExecutor::new())
        .pool_max_idle_per_host(0)
        .build(connector);
    let response = client.request(request).await.map_err(|e| chain(&e))?;
    let status = response.status();
    let body = match Limited::new(response.into_body(), ERROR_BODY_LIMIT)
        .collect()
        .await
    {
        Ok(collected) => collected.to_bytes(),
        // The status decides; a body cut short or too long only loses detail.
        Err(_) => Bytes::new(),
    };
    Ok((status, String::from_utf8_lossy(&body).into_owned()))
}

/// An error and its causes on one line (the client's own message is only "client error").
fn chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        source = cause.source();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_gateway_urls_and_refuses_what_it_would_not_send() {
        let g = Gateway::parse("http://pushgateway.monitoring:9091/").unwrap();
        assert_eq!(g.to_string(), "http://pushgateway.monitoring:9091");
        let g = Gateway::parse("HTTPS://gw.example.com/prefix/").unwrap();
        assert_eq!(g.to_string(), "https://gw.example.com/prefix");
        for bad in [
            "pushgateway:9091",
            "ftp://gw",
            "http://user:secret@gw:9091",
            "http://gw:9091?x=1",
            "http://gw:9091/#top",
            "http:///metrics",
            "",
        ] {
            assert!(Gateway::parse(bad).is_err(), "{bad} accepted");
        }
    }

    #[test]
    fn group_urls_encode_values_and_use_base64_where_the_gateway_needs_it() {
        let g = Gateway::parse("http://127.0.0.1:9091/gw").unwrap();
        let url = |v: &str| {
            g.group_url("karpdoctor", &[("cluster", v)])
                .unwrap()
                .to_string()
        };
        assert_eq!(
            url("prod-eu"),
            "http://127.0.0.1:9091/gw/metrics/job/karpdoctor/cluster/prod-eu"
        );
        assert_eq!(
            url("a b%c?#"),
            "http://127.0.0.1:9091/gw/metrics/job/karpdoctor/cluster/a%20b%25c%3F%23"
        );
        assert_eq!(
            url(""),
            "http://127.0.0.1:9091/gw/metrics/job/karpdoctor/cluster@base64/="
        );
        // "a/b?" in URL-safe base64: no '/' or '+' that would split or change the path.
        assert_eq!(
            url("a/b?"),
            "http://127.0.0.1:9091/gw/metrics/job/karpdoctor/cluster@base64/YS9iPw=="
        );
        assert_eq!(
            url("../../x@evil.example"),
            "http://127.0.0.1:9091/gw/metrics/job/karpdoctor/cluster@base64/Li4vLi4veEBldmlsLmV4YW1wbGU="
        );
    }
}
