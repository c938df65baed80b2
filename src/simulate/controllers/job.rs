//! The `job` controller's arithmetic: how many pods a Job wants active, which completion
//! indexes an Indexed Job still misses, and the template its pods get.

use super::*;

/// A Job with a `Complete` or `Failed` condition that is True creates nothing more.
pub(super) fn job_finished(job: &Job) -> bool {
    job.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .into_iter()
        .flatten()
        .any(|c| (c.type_ == "Complete" || c.type_ == "Failed") && c.status == "True")
}

/// Upstream `manageJob`: without completions, `parallelism` until one pod succeeded
/// (then only the active ones keep running); with completions, `parallelism` capped by
/// the completions left.
pub(super) fn job_want_active(
    parallelism: i32,
    completions: Option<i32>,
    succeeded: usize,
    active: usize,
) -> usize {
    let parallelism = usize::try_from(parallelism).unwrap_or(0);
    match completions {
        None if succeeded > 0 => active,
        None => parallelism,
        Some(completions) => usize::try_from(completions)
            .unwrap_or(0)
            .saturating_sub(succeeded)
            .min(parallelism),
    }
}

/// The completions a Job has: the most of `status.succeeded`, its Succeeded pods and
/// (Indexed) its completed indexes below `completions`.
pub(super) fn job_succeeded(job: &Job, owned: &[&Pod], completions: Option<i32>) -> usize {
    let pods = owned
        .iter()
        .filter(|pod| phase(pod) == Some("Succeeded"))
        .count();
    let status = job
        .status
        .as_ref()
        .and_then(|s| s.succeeded)
        .and_then(|n| usize::try_from(n).ok())
        .unwrap_or(0);
    let limit = i64::from(completions.unwrap_or(0));
    let indexes: i64 = completed_indexes(job)
        .iter()
        .map(|range| range.end.min(limit) - range.start)
        .filter(|n| *n > 0)
        .sum();
    pods.max(status).max(usize::try_from(indexes).unwrap_or(0))
}

/// The template as the API server stores it (`generateSelector`): unless
/// `manualSelector` is true, the job-name and controller-uid labels, legacy and
/// `batch.kubernetes.io/` ones, each kept when the template sets it already.
pub(super) fn job_template(job: &Job, template: &PodTemplateSpec) -> PodTemplateSpec {
    let mut template = template.clone();
    if job.spec.as_ref().and_then(|s| s.manual_selector) == Some(true) {
        return template;
    }
    let name = job.metadata.name.clone().unwrap_or_default();
    let uid = job.metadata.uid.clone().unwrap_or_default();
    let labels = template
        .metadata
        .get_or_insert_with(ObjectMeta::default)
        .labels
        .get_or_insert_with(BTreeMap::new);
    for (key, value) in [
        (LEGACY_JOB_NAME_LABEL, &name),
        (JOB_NAME_LABEL, &name),
        (LEGACY_CONTROLLER_UID_LABEL, &uid),
        (CONTROLLER_UID_LABEL, &uid),
    ] {
        labels
            .entry(key.to_string())
            .or_insert_with(|| value.clone());
    }
    template
}

/// Completion indexes an Indexed Job need not create, as ranges: those of its active and
/// succeeded pods and those in `status.completedIndexes` (`"1,3-5"`). Kept as ranges so
/// a long `completedIndexes` range costs nothing.
pub(super) fn job_taken_indexes(job: &Job, owned: &[&Pod]) -> Vec<Range<i64>> {
    let from_pods = owned
        .iter()
        .filter(|pod| is_active(pod) || phase(pod) == Some("Succeeded"))
        .filter_map(|pod| {
            let annotations = pod.metadata.annotations.as_ref()?;
            let index = annotations.get(JOB_COMPLETION_INDEX)?.parse::<i64>().ok()?;
            Some(index..index.saturating_add(1))
        });
    from_pods.chain(completed_indexes(job)).collect()
}

/// `status.completedIndexes` as ranges; unreadable parts are ignored.
pub(super) fn completed_indexes(job: &Job) -> Vec<Range<i64>> {
    let completed = job
        .status
        .as_ref()
        .and_then(|s| s.completed_indexes.as_deref())
        .unwrap_or_default();
    completed
        .split(',')
        .filter_map(|part| {
            let (first, last) = part
                .trim()
                .split_once('-')
                .unwrap_or((part.trim(), part.trim()));
            let first = first.parse::<i64>().ok()?;
            let last = last.parse::<i64>().ok()?;
            Some(first.max(0)..last.saturating_add(1))
        })
        .collect()
}

/// The `count` lowest indexes below `completions` that no range of `taken` holds; the
/// walk jumps over the ranges, so it takes at most `count + taken.len()` steps.
pub(super) fn free_indexes(completions: i64, mut taken: Vec<Range<i64>>, count: usize) -> Vec<i64> {
    taken.sort_by_key(|range| range.start);
    let mut ranges = taken.into_iter().peekable();
    let mut free = Vec::new();
    let mut next = 0;
    while free.len() < count && next < completions {
        match ranges.peek() {
            Some(range) if range.start <= next => {
                next = next.max(range.end);
                ranges.next();
            }
            upcoming => {
                let stop = upcoming.map_or(completions, |r| r.start.min(completions));
                while next < stop && free.len() < count {
                    free.push(next);
                    next += 1;
                }
            }
        }
    }
    free
}
