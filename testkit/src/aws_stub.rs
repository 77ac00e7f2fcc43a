//! Scripted and stalled AWS endpoints for fault tests.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::Response;

use crate::query_map;

/// A scripted AWS endpoint for fault tests: answers each request whose form body names
/// `Action=<action>` with the next response of its script (the last one repeats). Use it as a
/// per-service endpoint (`AWS_ENDPOINT_URL_STS`) to fail one service while the others reach
/// the emulator.
pub struct AwsStub {
    pub addr: SocketAddr,
    task: tokio::task::JoinHandle<()>,
    calls: Arc<Mutex<Vec<String>>>,
}

impl Drop for AwsStub {
    fn drop(&mut self) {
        self.task.abort();
    }
}

type Script = BTreeMap<String, Vec<(u16, String)>>;
/// The stub's shared state: its script and the actions it has been asked for.
type StubState = (Arc<Mutex<Script>>, Arc<Mutex<Vec<String>>>);

impl AwsStub {
    pub async fn start(script: Vec<(&str, Vec<(u16, String)>)>) -> std::io::Result<AwsStub> {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await?;
        let addr = listener.local_addr()?;
        let script: Arc<Mutex<Script>> = Arc::new(Mutex::new(
            script
                .into_iter()
                .map(|(a, r)| (a.to_string(), r))
                .collect(),
        ));
        let calls = Arc::new(Mutex::new(Vec::new()));
        let state = (Arc::clone(&script), Arc::clone(&calls));
        let app = Router::new().fallback(aws_stub).with_state(state);
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok(AwsStub { addr, task, calls })
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The actions requested so far, in order (retries included).
    pub fn calls(&self) -> Vec<String> {
        self.calls.lock().map(|c| c.clone()).unwrap_or_default()
    }

    /// The query-protocol error document AWS sends (`Throttling`, `AccessDenied`, …).
    pub fn error_xml(code: &str, message: &str) -> String {
        format!(
            "<ErrorResponse><Error><Type>Sender</Type><Code>{code}</Code><Message>{message}</Message></Error><RequestId>stub</RequestId></ErrorResponse>"
        )
    }

    /// A successful `sts:GetCallerIdentity` answer.
    pub fn caller_identity_xml(account: &str, arn: &str) -> String {
        format!(
            "<GetCallerIdentityResponse xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\"><GetCallerIdentityResult><Arn>{arn}</Arn><UserId>AIDASTUB</UserId><Account>{account}</Account></GetCallerIdentityResult><ResponseMetadata><RequestId>stub</RequestId></ResponseMetadata></GetCallerIdentityResponse>"
        )
    }
}

async fn aws_stub(State((script, calls)): State<StubState>, body: String) -> Response {
    let action = query_map(&body).get("Action").cloned().unwrap_or_default();
    if let Ok(mut c) = calls.lock() {
        c.push(action.clone());
    }
    let next = script.lock().ok().and_then(|mut s| {
        let responses = s.get_mut(&action)?;
        if responses.len() > 1 {
            Some(responses.remove(0))
        } else {
            responses.first().cloned()
        }
    });
    let (code, body) = next.unwrap_or((400, AwsStub::error_xml("InvalidAction", "not scripted")));
    Response::builder()
        .status(StatusCode::from_u16(code).unwrap_or(StatusCode::BAD_REQUEST))
        .header(header::CONTENT_TYPE, "text/xml")
        .body(Body::from(body))
        .unwrap_or_default()
}

/// A TCP endpoint that accepts connections and never answers: the stalled API server or AWS
/// endpoint every timeout must survive. Returns its `http://` URL; connections are held for
/// as long as the task lives.
pub async fn stalled_endpoint() -> std::io::Result<(String, tokio::task::JoinHandle<()>)> {
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await?;
    let url = format!("http://{}", listener.local_addr()?);
    let task = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            held.push(socket);
        }
    });
    Ok((url, task))
}
