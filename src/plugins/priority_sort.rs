//! PrioritySort: the default QueueSort. Pods with higher `spec.priority` go first; among
//! equal priorities, the pod queued earlier goes first (upstream `plugins/queuesort`).

use crate::framework::{Handle, NoArgs, PluginError, QueueSortPlugin, QueuedPodInfo};

/// The PrioritySort plugin. Stateless.
#[derive(Debug, Clone, Copy, Default)]
pub struct PrioritySort;

crate::plugin! {
    PrioritySort {
        name: "PrioritySort",
        points: [QueueSort],
    }

    impl Plugin {
        // No `events_to_register`: a QueueSort plugin never rejects a pod, and upstream's
        // PrioritySort does not implement EnqueueExtensions either.
    }

    impl PluginFactory {
        const DESCRIPTION: &'static str =
            "Orders the scheduling queue: higher pod priority first, then the pod queued earlier.";
        type Args = NoArgs;

        fn build(_: NoArgs, _: &Handle) -> Result<Self, PluginError> {
            Ok(PrioritySort)
        }
    }
}

impl QueueSortPlugin for PrioritySort {
    fn less(&self, a: &QueuedPodInfo, b: &QueuedPodInfo) -> bool {
        let (pa, pb) = (a.pod_info.priority(), b.pod_info.priority());
        pa > pb || (pa == pb && a.timestamp < b.timestamp)
    }
}

#[cfg(test)]
mod tests {
    use crate::framework::{ExtensionPoint, Plugin, PluginFactory};
    use std::sync::Arc;
    use std::time::Duration;

    use std::time::Instant;

    use super::*;
    use crate::testing::make_pod;

    fn queued(name: &str, priority: i32, timestamp: Instant) -> QueuedPodInfo {
        let info = make_pod()
            .name(name)
            .namespace("default")
            .priority(priority)
            .info();
        QueuedPodInfo::new(Arc::new(info), timestamp)
    }

    #[test]
    fn registry_points_match_the_accessors() {
        assert!(PrioritySort.as_queue_sort().is_some());
        assert!(PrioritySort.as_pre_enqueue().is_none());
        assert_eq!(PrioritySort::POINTS, &[ExtensionPoint::QueueSort]);
    }

    #[test]
    fn less_matches_upstream_table() {
        // Upstream `TestLess`, in order. Upstream leaves the timestamps of the first two
        // cases at their zero value; equal timestamps are used here.
        let (low, high) = (10, 100);
        let t1 = Instant::now();
        let t2 = t1 + Duration::from_secs(1);
        let cases = [
            (
                "p1.priority less than p2.priority",
                (low, t1),
                (high, t1),
                false,
            ),
            (
                "p1.priority greater than p2.priority",
                (high, t1),
                (low, t1),
                true,
            ),
            (
                "equal priority. p1 is added to schedulingQ earlier than p2",
                (high, t1),
                (high, t2),
                true,
            ),
            (
                "equal priority. p2 is added to schedulingQ earlier than p1",
                (high, t2),
                (high, t1),
                false,
            ),
        ];
        for (name, (p1, ts1), (p2, ts2), want) in cases {
            let got = PrioritySort.less(&queued("p1", p1, ts1), &queued("p2", p2, ts2));
            assert_eq!(got, want, "case {name}");
        }
    }
}
