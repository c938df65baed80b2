//! Opportunistic batching, as upstream 1.35+'s `OpportunisticBatch` (KEP-5598, the
//! `OpportunisticBatching` gate, on by default): a pod with the same signature as the
//! pod scheduled in the cycle just before takes the best remaining node of that pod's
//! sorted candidates (a "hint") instead of filtering and scoring the cluster again.
//!
//! Upstream's conditions, each checked in its order:
//! - a state exists and has candidates left;
//! - this cycle directly follows the one that stored it (no other pod, of any profile,
//!   was tried in between) and that one succeeded;
//! - the pod is not nominated to a node;
//! - the signatures are equal ([`crate::framework::signature`]);
//! - the state is younger than [`MAX_BATCH_AGE`] (on the scheduler's clock);
//! - the node the previous pod took still exists. When the pod would still fit there
//!   (Filter without nominated pods), that node is scored again (PreScore over it and
//!   the candidates on a copy of the cycle state, its raw scores, every candidate
//!   renormalized from its kept raw scores) and competes with the others; a Filter
//!   error ends the batch.
//!
//! The hint is then filtered like a nominated node: when it passes, it is the cycle's
//! only feasible node and the state is kept for the next pod; otherwise the cycle runs
//! in full and its results replace the state. A cycle that chose its node in full stores
//! the other feasible nodes with their totals and raw scores, best first; one with a
//! single feasible node, or a pod without a signature, leaves no state.
//!
//! Where this makes placements differ from pod-by-pod scheduling, it differs as upstream
//! does: the candidates are the nodes the first pod's cycle found (a share of a large
//! cluster, `percentageOfNodesToScore`), and their scores are that cycle's.
//!
//! Ties: upstream pops equal totals in its heap's order; berth breaks them at random
//! with keys from the batch's own generator (seeded from the scheduler's seed), so
//! that the scheduler's tie-breaking sequence is the same with batching on or off.
//!
//! Not modelled: batching inside pod-group cycles (upstream's GenericWorkload gate lets
//! a group's members share one cycle's state); berth's group cycles neither use nor keep
//! a batch.

use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::cluster::{NodeInfo, PodInfo, Snapshot};
use crate::framework::{Code, CycleState, Framework, RawScores, Signature};

/// A batch older than this is not used (upstream `maxBatchAge`).
pub const MAX_BATCH_AGE: Duration = Duration::from_millis(500);

/// One profile's batch.
pub struct Batch {
    state: Option<BatchState>,
    last: Option<LastCycle>,
    rng: ChaCha8Rng,
    /// Pods placed on their hint.
    pub batched: u64,
}

struct BatchState {
    signature: Signature,
    /// Ascending by (total, tie key): the best candidate is last.
    candidates: Vec<Candidate>,
    created: Instant,
}

/// A feasible node of the cycle that stored the state, with that cycle's scores.
pub struct Candidate {
    name: String,
    total: i64,
    tie: u64,
    raw: Vec<i64>,
}

struct LastCycle {
    cycle: u64,
    chosen: String,
}

impl std::fmt::Debug for Batch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Batch")
            .field(
                "candidates",
                &self.state.as_ref().map(|s| s.candidates.len()),
            )
            .field("batched", &self.batched)
            .finish()
    }
}

impl Batch {
    pub fn new(seed: u64) -> Self {
        Batch {
            state: None,
            last: None,
            rng: ChaCha8Rng::seed_from_u64(seed ^ 0x6261_7463_6865_7321),
            batched: 0,
        }
    }

    /// The other feasible nodes of a cycle that chose `chosen` among `feasible` with
    /// `totals` and `raw` scores, for [`Batch::store`].
    pub fn others(
        &mut self,
        feasible: &[Arc<NodeInfo>],
        totals: &[i64],
        raw: RawScores,
        chosen: usize,
    ) -> Vec<Candidate> {
        feasible
            .iter()
            .zip(totals)
            .zip(raw.0)
            .enumerate()
            .filter(|(i, _)| *i != chosen)
            .map(|(_, ((node, &total), raw))| Candidate {
                name: node.name().to_string(),
                total,
                tie: self.rng.random(),
                raw,
            })
            .collect()
    }

    /// Upstream's `GetNodeHint`: the node to try first for `pod`, when the batch may be
    /// used (see the module docs). `nominated`: the pod is nominated to a node.
    #[allow(clippy::too_many_arguments)]
    pub async fn node_hint(
        &mut self,
        fwk: &Framework,
        state: &CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot,
        signature: Option<&Signature>,
        nominated: bool,
        cycle: u64,
        now: Instant,
    ) -> Option<String> {
        let usable = {
            let batch = self.state.as_ref().filter(|s| !s.candidates.is_empty())?;
            let last = self.last.as_ref()?;
            cycle == last.cycle + 1
                && !nominated
                && signature == Some(&batch.signature)
                && now.saturating_duration_since(batch.created) <= MAX_BATCH_AGE
        };
        if !usable || !self.refresh(fwk, state, pod, snapshot).await {
            return None;
        }
        let batch = self.state.as_mut()?;
        batch.candidates.pop().map(|c| c.name)
    }

    /// Upstream's `refreshHintCandidates`: false when the batch cannot be used.
    async fn refresh(
        &mut self,
        fwk: &Framework,
        state: &CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot,
    ) -> bool {
        let Some(chosen) = self.last.as_ref().map(|l| l.chosen.as_str()) else {
            return false;
        };
        let Some(last) = snapshot.get(chosen) else {
            return false;
        };
        let status = fwk.run_filter_plugins(state, pod, last);
        if status.is_success() {
            return self.rescore(fwk, state, pod, snapshot, last.clone()).await;
        }
        // A rejection is what makes the next candidate the best; an error ends the batch.
        status.code() != Code::Error
    }

    /// Upstream's `rescoreHintedNode`: the previous pod's node, which still fits, scored
    /// again among the candidates.
    async fn rescore(
        &mut self,
        fwk: &Framework,
        state: &CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot,
        last: Arc<NodeInfo>,
    ) -> bool {
        let tie = self.rng.random();
        let Some(batch) = self.state.as_mut() else {
            return false;
        };
        let mut nodes = Vec::with_capacity(batch.candidates.len() + 1);
        for c in &batch.candidates {
            match snapshot.get(&c.name) {
                Some(node) => nodes.push(node.clone()),
                None => return false,
            }
        }
        nodes.push(last.clone());
        let mut rescore_state = state.clone();
        if !fwk
            .run_pre_score(&mut rescore_state, pod, &nodes)
            .await
            .is_success()
        {
            return false;
        }
        let Ok(raw) = fwk.raw_scores(&rescore_state, pod, &last) else {
            return false;
        };
        // The state changes only when every step succeeded, as upstream.
        let mut raws: Vec<Vec<i64>> = batch.candidates.iter().map(|c| c.raw.clone()).collect();
        raws.push(raw.clone());
        let Ok(totals) = fwk.renormalize(&rescore_state, pod, &nodes, &raws) else {
            return false;
        };
        batch.candidates.push(Candidate {
            name: last.name().to_string(),
            total: 0,
            tie,
            raw,
        });
        for (c, total) in batch.candidates.iter_mut().zip(totals) {
            c.total = total;
        }
        sort(&mut batch.candidates);
        true
    }

    /// Upstream's `StoreScheduleResults`, called when a cycle chose `chosen`: `others`
    /// are the cycle's other feasible nodes when it scored them (none when one node was
    /// feasible or the pod has no signature).
    pub fn store(
        &mut self,
        signature: Option<Signature>,
        hinted: Option<&str>,
        chosen: &str,
        others: Option<Vec<Candidate>>,
        cycle: u64,
        now: Instant,
    ) {
        self.last = Some(LastCycle {
            cycle,
            chosen: chosen.to_string(),
        });
        if hinted == Some(chosen) {
            self.batched += 1;
            return;
        }
        self.state = match (signature, others) {
            (Some(signature), Some(mut candidates)) if !candidates.is_empty() => {
                sort(&mut candidates);
                Some(BatchState {
                    signature,
                    candidates,
                    created: now,
                })
            }
            _ => None,
        };
    }
}

/// Ascending by total, then tie key: the best candidate last.
fn sort(candidates: &mut [Candidate]) {
    candidates.sort_unstable_by_key(|c| (c.total, c.tie));
}

#[cfg(test)]
mod tests;
