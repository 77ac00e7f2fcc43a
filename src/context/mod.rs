//! The context owns every fact of a run: each one is fetched at most once, by whichever
//! check asks first, and shared with every other check (one `OnceCell` per fact key).
//!
//! Checks see only [`Facts`]: the typed accessors (`accessors.rs`), the target, the time the
//! run judges against, the hints and [`Facts::enrich`]. The backend is a private field with no
//! accessor, so no check can reach a client; the run itself holds the [`Context`] around it.

mod accessors;
mod stats;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::sync::OnceCell;

use crate::backend::Backend;
use crate::bundle::Bundle;
use crate::facts::{FactError, FactKey, FactKind, Shared, Typed};
use crate::target::{Hints, Target};

pub use stats::{CriticalPath, FetchStat, critical_path};

type Cell = Arc<OnceCell<Result<Shared, FactError>>>;

/// A value derived from facts once per run ([`Facts::derived`]), with the facts it read.
type DerivedCell = Arc<OnceCell<(Result<Shared, FactError>, BTreeSet<FactKey>)>>;

tokio::task_local! {
    /// The check whose task is running, so fact reads can be attributed to it.
    pub static CURRENT_CHECK: &'static str;
    /// Set inside [`Context::enrich`]: the reads only add evidence to a verdict already
    /// reached from other facts.
    static ENRICHING: bool;
    /// Of the facts one logical task (a check, or the run's target resolution) has read so
    /// far, the one that finished last, and when: what a new fetch in that task had to wait
    /// for. Only the latest is kept, so a check that reads 20,000 nodes pays a comparison per
    /// read, not a walk over everything it read before.
    static CHAIN: Chain;
    /// Set while a [`Facts::derived`] value is computed: every fact read for it, so the checks
    /// that reuse the value are credited with the reads it rests on.
    static DERIVING: Arc<Mutex<BTreeSet<FactKey>>>;
}

/// The latest-finished read of one chain: when it finished, and which fact it was.
type Chain = Arc<Mutex<Option<(Duration, FactKey)>>>;

/// Runs `f` as one chain of reads for the critical-path statistics: each fact asked for
/// inside it is taken to depend on the last fact read inside it before.
pub fn chained<F: std::future::Future>(f: F) -> tokio::task::futures::TaskLocalFuture<Chain, F> {
    CHAIN.scope(Arc::new(Mutex::new(None)), f)
}

/// What checks may know: facts (each fetched once), the target, the time and the hints.
pub struct Facts {
    backend: Backend,
    reads: Mutex<BTreeMap<&'static str, BTreeSet<FactKey>>>,
    /// Reads made inside [`Facts::enrich`], per check.
    enrichments: Mutex<BTreeMap<&'static str, BTreeSet<FactKey>>>,
    /// Facts the run decided something about a check from ([`Context::credit`]): not the
    /// check's own reads, so not among what it must declare.
    credited: Mutex<BTreeMap<&'static str, BTreeSet<FactKey>>>,
    cells: Mutex<HashMap<FactKey, Cell>>,
    derived: Mutex<HashMap<&'static str, DerivedCell>>,
    recorded: Option<Mutex<BTreeMap<FactKey, Result<Value, FactError>>>>,
    stats: Mutex<BTreeMap<FactKey, FetchStat>>,
    hints: Hints,
    target: Mutex<Target>,
    now: jiff::Timestamp,
    /// When the context was created: fetch start and end times are offsets from it.
    epoch: Instant,
}

/// The run's handle on its facts: what checks see ([`Facts`], through `Deref`) plus what the
/// run needs around them (the target it resolved, the recording, statistics, prefetching).
pub struct Context {
    facts: Facts,
}

impl std::ops::Deref for Context {
    type Target = Facts;
    fn deref(&self) -> &Facts {
        &self.facts
    }
}

impl Context {
    /// A context over `backend`. With `record`, every raw fact is kept for [`Self::recording`].
    pub fn new(backend: Backend, hints: Hints, record: bool) -> Self {
        Context {
            facts: Facts {
                backend,
                cells: Mutex::new(HashMap::new()),
                derived: Mutex::new(HashMap::new()),
                reads: Mutex::new(BTreeMap::new()),
                enrichments: Mutex::new(BTreeMap::new()),
                credited: Mutex::new(BTreeMap::new()),
                recorded: record.then(|| Mutex::new(BTreeMap::new())),
                stats: Mutex::new(BTreeMap::new()),
                hints,
                target: Mutex::new(Target::default()),
                now: jiff::Timestamp::now(),
                epoch: Instant::now(),
            },
        }
    }

    pub fn set_now(&mut self, now: jiff::Timestamp) {
        self.facts.now = now;
    }

    pub fn set_target(&self, target: Target) {
        *lock(&self.facts.target) = target;
    }

    /// The recording of this run as a bundle: its hints and facts, stamped with the moment the
    /// facts describe (a recording of a replay keeps the original moment, so age-based
    /// judgements, such as conditions stuck for minutes, replay the same).
    pub fn bundle(&self, target: Target) -> Bundle {
        let mut bundle = Bundle::new(self.facts.hints.clone(), target, self.recording());
        bundle.recorded_at = Some(self.facts.now.to_string());
        bundle
    }

    /// Every fact fetched so far with its raw value or error (only when recording).
    pub fn recording(&self) -> BTreeMap<FactKey, Result<Value, FactError>> {
        self.facts
            .recorded
            .as_ref()
            .map(|m| lock(m).clone())
            .unwrap_or_default()
    }

    /// The fact kinds each check read in this run, for its verdict or as evidence (checks
    /// are identified by code).
    pub fn reads(&self) -> BTreeMap<&'static str, BTreeSet<FactKind>> {
        let mut out: BTreeMap<&'static str, BTreeSet<FactKind>> = BTreeMap::new();
        for map in [&self.facts.reads, &self.facts.enrichments] {
            for (code, keys) in lock(map).iter() {
                out.entry(*code)
                    .or_default()
                    .extend(keys.iter().map(FactKey::kind));
            }
        }
        out
    }

    /// The fact keys each check's verdict depends on (reads inside [`Facts::enrich`] are
    /// not among them), the run's decisions about the check ([`Context::credit`]) included.
    pub fn read_keys(&self) -> BTreeMap<&'static str, BTreeSet<FactKey>> {
        let mut out = lock(&self.facts.reads).clone();
        for (code, keys) in lock(&self.facts.credited).iter() {
            out.entry(*code).or_default().extend(keys.iter().cloned());
        }
        out
    }

    /// Credits `check` with a read of `key` it did not make itself: the run decided something
    /// about the check from that fact (whether it applies, `docs/auto-mode.md` §9), so its
    /// outcome depends on the fact as if it had read it.
    pub fn credit(&self, check: &'static str, key: FactKey) {
        lock(&self.facts.credited)
            .entry(check)
            .or_default()
            .insert(key);
    }

    /// The fact keys each check read only to add evidence.
    pub fn enrichment_keys(&self) -> BTreeMap<&'static str, BTreeSet<FactKey>> {
        lock(&self.facts.enrichments).clone()
    }

    /// Fetch statistics per fact key.
    pub fn fetch_stats(&self) -> BTreeMap<FactKey, FetchStat> {
        lock(&self.facts.stats).clone()
    }

    /// The run's critical path: of all chains of fetches linked by [`FetchStat::after`], the
    /// one with the most rounds of requests (the latest-finishing one among equals).
    pub fn critical_path(&self) -> CriticalPath {
        critical_path(&lock(&self.facts.stats))
    }

    /// Fetches a fact ahead of the checks that need it; it is decoded into the type the facts
    /// table declares, which is the type every later read asks for.
    pub async fn prefetch(&self, key: FactKey) {
        let _ = self.facts.shared(key).await;
    }
}

impl Facts {
    /// The time the run judges "how long" against: now, or when a replayed bundle was
    /// recorded.
    /// A fact's value when the run has already read it; never fetches, so the run's own
    /// bookkeeping after the checks (`--history`'s churn sample) adds no read.
    pub fn peek<T: Send + Sync + 'static>(&self, key: Typed<T>) -> Option<Arc<T>> {
        let cell = lock(&self.cells).get(&key.into_key()).cloned()?;
        let shared = cell.get()?.as_ref().ok()?.clone();
        shared.downcast::<T>().ok()
    }

    pub fn now(&self) -> jiff::Timestamp {
        self.now
    }

    pub fn hints(&self) -> &Hints {
        &self.hints
    }

    pub fn target(&self) -> Target {
        lock(&self.target).clone()
    }

    /// Runs `f`, whose fact reads only add evidence to a verdict reached from other facts:
    /// the crash loop is a crash loop whether or not its log can be read. Such reads must
    /// not decide the verdict; a check reports their failure in the evidence instead.
    pub async fn enrich<F: std::future::Future>(&self, f: F) -> F::Output {
        ENRICHING.scope(true, f).await
    }

    /// A value several checks derive the same way from the same facts (the controller's
    /// simulated grants: four checks judge them), computed once per run by the first check to
    /// ask and shared. Every check that uses it is credited with the facts it was derived from,
    /// as if it had read them itself, so its verdict turns `unknown` when one of them fails and
    /// its declared needs stay checked. `name` identifies the derivation; `derive` must depend
    /// only on facts (not on the check asking).
    pub async fn derived<T, F>(&self, name: &'static str, derive: F) -> Result<Arc<T>, FactError>
    where
        T: Send + Sync + 'static,
        F: std::future::Future<Output = Result<T, FactError>>,
    {
        let cell = lock(&self.derived).entry(name).or_default().clone();
        let (result, keys) = cell
            .get_or_init(|| async {
                let seen = Arc::new(Mutex::new(BTreeSet::new()));
                let out = DERIVING.scope(Arc::clone(&seen), derive).await;
                let keys = std::mem::take(&mut *lock(&seen));
                (out.map(|v| Arc::new(v) as Shared), keys)
            })
            .await
            .clone();
        for key in &keys {
            self.credit_read(key);
        }
        result.and_then(|shared| {
            shared.downcast::<T>().map_err(|_| FactError::Malformed {
                message: format!("{name}: derived with two different types (karpdoctor bug)"),
            })
        })
    }

    /// Attributes a read of `key` to the running check (as evidence inside
    /// [`Facts::enrich`]) and to the derivation being computed, if any.
    fn credit_read(&self, key: &FactKey) {
        if let Ok(code) = CURRENT_CHECK.try_with(|c| *c) {
            let map = if ENRICHING.try_with(|e| *e).unwrap_or(false) {
                &self.enrichments
            } else {
                &self.reads
            };
            lock(map).entry(code).or_default().insert(key.clone());
        }
        let _ = DERIVING.try_with(|seen| lock(seen).insert(key.clone()));
    }

    /// Reads a fact, fetching it on first use. Private: the typed accessors are the only
    /// callers, and the typed key fixes the value type.
    async fn get<T: Send + Sync + 'static>(&self, key: Typed<T>) -> Result<Arc<T>, FactError> {
        let key = key.into_key();
        let shared = self.shared(key.clone()).await?;
        shared.downcast::<T>().map_err(|_| FactError::Malformed {
            message: format!("{key}: read with two different types (karpdoctor bug)"),
        })
    }

    /// Reads a fact as the shared value of its declared type, fetching it on first use.
    async fn shared(&self, key: FactKey) -> Result<Shared, FactError> {
        self.credit_read(&key);
        let cell = lock(&self.cells).entry(key.clone()).or_default().clone();
        let result = cell
            .get_or_init(|| async {
                let after = self.waited_on();
                let started = self.epoch.elapsed();
                let calls = Arc::new(crate::guard::FetchCalls::default());
                let raw = crate::guard::FETCH
                    .scope(Arc::clone(&calls), self.backend.fetch(&key))
                    .await;
                {
                    let finished = self.epoch.elapsed();
                    let (requests, rounds) = calls.counts();
                    let mut stats = lock(&self.stats);
                    let stat = stats.entry(key.clone()).or_default();
                    stat.fetches += 1;
                    stat.duration = finished.saturating_sub(started);
                    stat.started = started;
                    stat.finished = finished;
                    stat.calls = requests;
                    stat.rounds = rounds;
                    stat.after = after;
                    stat.requested_by = CURRENT_CHECK.try_with(|c| *c).ok();
                    stat.error = raw.as_ref().err().map(|e| e.kind_name().to_string());
                }
                if let Some(rec) = &self.recorded {
                    let tree = raw.clone().and_then(|s| {
                        s.into_value().map_err(|e| FactError::Malformed {
                            message: format!("{key}: {e}"),
                        })
                    });
                    lock(rec).insert(key.clone(), tree);
                }
                key.kind().decode(&key, raw?)
            })
            .await
            .clone();
        self.note_read(&key);
        result
    }

    /// Of the facts the current task has read, the one that finished last: a fetch asked for
    /// now could not have started before it.
    fn waited_on(&self) -> Option<FactKey> {
        CHAIN
            .try_with(|c| lock(c).as_ref().map(|(_, k)| k.clone()))
            .ok()
            .flatten()
    }

    /// Records that the current task has read `key` (whose fetch has finished by now).
    fn note_read(&self, key: &FactKey) {
        let Some(finished) = lock(&self.stats).get(key).map(|s| s.finished) else {
            return;
        };
        let _ = CHAIN.try_with(|chain| {
            let mut latest = lock(chain);
            if latest.as_ref().is_none_or(|(at, _)| finished >= *at) {
                *latest = Some((finished, key.clone()));
            }
        });
    }
}

/// Locks a mutex, recovering the data if a panicking check poisoned it: the maps it guards
/// are only ever inserted into, so they stay consistent.
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::recorded::Recorded;

    fn context() -> Context {
        let facts = BTreeMap::from([
            (FactKey::nodepools().into_key(), Ok(serde_json::json!([]))),
            (
                FactKey::oidc_providers().into_key(),
                Ok(serde_json::json!([])),
            ),
        ]);
        let bundle = Bundle::new(Hints::default(), Target::default(), facts).into_stored();
        Context::new(
            Backend::Recorded(Recorded::from_bundle(bundle)),
            Hints::default(),
            false,
        )
    }

    /// A derivation runs once however many checks ask, and every check that uses it is
    /// credited with what it read: the second check never ran it, yet must turn `unknown`
    /// when one of those facts fails (the fault matrix relies on these reads).
    #[tokio::test]
    async fn a_derived_value_is_computed_once_and_credits_every_user_with_its_reads() {
        let cx = context();
        let runs = std::sync::atomic::AtomicUsize::new(0);
        let derive = || async {
            runs.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let (pools, oidc) = futures::future::join(cx.nodepools(), cx.oidc_providers()).await;
            Ok::<usize, FactError>(pools?.len() + oidc?.len())
        };
        for code in ["check a", "check b"] {
            let value = CURRENT_CHECK
                .scope(code, cx.derived("test", derive()))
                .await
                .unwrap();
            assert_eq!(*value, 0);
        }
        // A check inside `enrich` is credited as evidence, not as a verdict read.
        CURRENT_CHECK
            .scope("check c", cx.enrich(cx.derived("test", derive())))
            .await
            .unwrap();
        assert_eq!(runs.load(std::sync::atomic::Ordering::SeqCst), 1);
        let both = BTreeSet::from([
            FactKey::nodepools().into_key(),
            FactKey::oidc_providers().into_key(),
        ]);
        let reads = cx.read_keys();
        assert_eq!(reads.get("check a"), Some(&both));
        assert_eq!(reads.get("check b"), Some(&both));
        assert_eq!(reads.get("check c"), None);
        assert_eq!(cx.enrichment_keys().get("check c"), Some(&both));
    }

    /// A derivation inside another passes its reads up: the outer value's users are credited
    /// with the inner one's facts too.
    #[tokio::test]
    async fn a_derivation_inside_another_passes_its_reads_up() {
        let cx = context();
        let inner = || async { cx.nodepools().await.map(|p| p.len()) };
        let outer = || async {
            let n = cx.derived("inner", inner()).await?;
            Ok::<usize, FactError>(*n + cx.oidc_providers().await?.len())
        };
        // The inner value exists before the outer one is derived, so the outer derivation
        // reads nodepools only through it.
        CURRENT_CHECK
            .scope("check a", cx.derived("inner", inner()))
            .await
            .unwrap();
        CURRENT_CHECK
            .scope("check b", cx.derived("outer", outer()))
            .await
            .unwrap();
        CURRENT_CHECK
            .scope("check c", cx.derived("outer", outer()))
            .await
            .unwrap();
        let both = BTreeSet::from([
            FactKey::nodepools().into_key(),
            FactKey::oidc_providers().into_key(),
        ]);
        assert_eq!(cx.read_keys().get("check c"), Some(&both));
    }
}
