//! Simulations asked at about the same time, for the same principal and request context, sent
//! as one `iam:SimulatePrincipalPolicy` request.
//!
//! Checks ask for their simulations on their own, and many carry the same context (often only
//! the cluster's region). IAM answers a request for every action on every resource it names,
//! so one request can stand for several simulations, and the run waits for fewer rounds under
//! IAM's concurrency limit. Each simulation stays its own fact (recorded, replayed and shown
//! under its own key): only the request is shared, and each keeps its own pairs of the answer
//! (`iam::simulation::split`).
//!
//! The first simulation of a principal and context opens a request and lets the runtime run
//! the other ready tasks a few turns before it takes an IAM permit; every simulation with the
//! same principal and context asked before it holds one joins it. So a request gathers what
//! was asked together (checks woken by the same answer, such as the controller's role) and
//! what queued behind the limit, and adds no wait when nothing else is asked.

use std::collections::HashMap;
use std::sync::Mutex;

use serde_json::Value;
use tokio::sync::{Semaphore, oneshot};

use super::errors::to_value;
use super::iam::simulation_results;
use crate::facts::{ContextEntry, FactError, RawResult};
use crate::iam::simulation::{merge, split};

/// Turns of the runtime a new request waits before it takes a permit: enough for the tasks
/// woken with it to reach their own simulations, a few microseconds when nothing else is ready.
const GATHER_TURNS: usize = 4;

#[derive(Clone, Debug, Hash, PartialEq, Eq)]
struct Key {
    principal: String,
    context: Vec<ContextEntry>,
}

/// What a joiner gets back: its own results; `None` when the shared answer cannot stand for
/// its own (it asks alone); an error every simulation of the request would get.
type Reply = Result<Option<Vec<RawResult>>, FactError>;

struct Joiner {
    actions: Vec<String>,
    resources: Vec<String>,
    reply: oneshot::Sender<Reply>,
}

/// The open requests of one live backend, by principal and context.
#[derive(Default)]
pub(super) struct Coalescer {
    open: Mutex<HashMap<Key, Vec<Joiner>>>,
}

/// One simulation as a fact asks it.
pub(super) struct Ask<'a> {
    pub principal: &'a str,
    pub actions: &'a [String],
    pub resources: &'a [String],
    pub context: &'a [ContextEntry],
}

/// Closes an opened request if its opener is dropped before sending it (a run cut short):
/// its joiners' replies are dropped with it, and each asks alone instead of waiting forever.
struct Opened<'a> {
    coalescer: &'a Coalescer,
    key: Option<Key>,
}

impl Opened<'_> {
    fn take(&mut self) -> Vec<Joiner> {
        match self.key.take() {
            Some(key) => self.coalescer.lock().remove(&key).unwrap_or_default(),
            None => Vec::new(),
        }
    }
}

impl Drop for Opened<'_> {
    fn drop(&mut self) {
        drop(self.take());
    }
}

impl Coalescer {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Key, Vec<Joiner>>> {
        self.open.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The simulation's results as its fact's value, from a request it shares when it can.
    pub(super) async fn simulate(
        &self,
        iam: &aws_sdk_iam::Client,
        limit: &Semaphore,
        ask: Ask<'_>,
    ) -> Result<Value, FactError> {
        let key = Key {
            principal: ask.principal.to_string(),
            context: ask.context.to_vec(),
        };
        let joined = {
            let mut open = self.lock();
            match open.get_mut(&key) {
                Some(joiners) => {
                    let (reply, answer) = oneshot::channel();
                    joiners.push(Joiner {
                        actions: ask.actions.to_vec(),
                        resources: ask.resources.to_vec(),
                        reply,
                    });
                    Some(answer)
                }
                None => {
                    open.insert(key.clone(), Vec::new());
                    None
                }
            }
        };
        if let Some(answer) = joined {
            return match answer.await {
                Ok(Ok(Some(own))) => {
                    crate::guard::shared_request();
                    to_value(own)
                }
                Ok(Err(e)) => Err(e),
                // The shared answer could not stand for this simulation's, or the request was
                // never sent: ask alone.
                Ok(Ok(None)) | Err(_) => alone(iam, limit, &ask).await,
            };
        }
        let mut opened = Opened {
            coalescer: self,
            key: Some(key),
        };
        for _ in 0..GATHER_TURNS {
            tokio::task::yield_now().await;
        }
        // The semaphore is never closed, so acquiring cannot fail; send unbounded if it did.
        let permit = limit.acquire().await.ok();
        let joiners = opened.take();
        if joiners.is_empty() {
            let own =
                simulation_results(iam, ask.principal, ask.actions, ask.resources, ask.context)
                    .await?;
            return to_value(own);
        }
        let (actions, resources) = merge(
            std::iter::once((ask.actions, ask.resources))
                .chain(joiners.iter().map(|j| (&j.actions[..], &j.resources[..]))),
        );
        let answer =
            simulation_results(iam, ask.principal, &actions, &resources, ask.context).await;
        drop(permit);
        let own_of = |actions: &[String], own_resources: &[String]| -> Reply {
            match &answer {
                Ok(results) => Ok(split(results, actions, own_resources, &resources)),
                // IAM refusing the request itself may be one simulation's doing (a malformed
                // ARN): each asks alone and gets its own answer or error.
                Err(FactError::Api { .. } | FactError::Malformed { .. }) => Ok(None),
                // karpdoctor's own permission to simulate this principal, throttling, an
                // endpoint out of reach: the same for every simulation of the request, so
                // asking again alone would only wait again.
                Err(e) => Err(e.clone()),
            }
        };
        for j in joiners {
            let _ = j.reply.send(own_of(&j.actions, &j.resources));
        }
        match own_of(ask.actions, ask.resources)? {
            Some(own) => to_value(own),
            None => alone(iam, limit, &ask).await,
        }
    }
}

/// The simulation in a request of its own.
async fn alone(
    iam: &aws_sdk_iam::Client,
    limit: &Semaphore,
    ask: &Ask<'_>,
) -> Result<Value, FactError> {
    let _permit = limit.acquire().await.ok();
    to_value(simulation_results(iam, ask.principal, ask.actions, ask.resources, ask.context).await?)
}
