//! SchedulingGates: keeps a pod out of activeQ while it carries `spec.schedulingGates`
//! (upstream `plugins/schedulinggates`). The pod is retried once an update removes its
//! last gate.

use crate::cluster::PodInfo;
use crate::framework::{
    ActionType, ClusterEvent, EventResource, Handle, NoArgs, PluginError, PreEnqueuePlugin, Status,
};

/// The SchedulingGates plugin. Stateless.
#[derive(Debug, Clone, Copy, Default)]
pub struct SchedulingGates;

crate::plugin! {
    SchedulingGates {
        name: "SchedulingGates",
        points: [PreEnqueue],
    }

    impl Plugin {
        /// As upstream: only an update that removes the pod's scheduling gates can admit it.
        fn events_to_register(&self) -> Option<Vec<ClusterEvent>> {
            Some(vec![ClusterEvent::new(
                EventResource::Pod,
                ActionType::UPDATE_POD_SCHEDULING_GATES_ELIMINATED,
            )])
        }
    }

    impl PluginFactory {
        const DESCRIPTION: &'static str = "Keeps a pod out of the active queue while it has `spec.schedulingGates`, and retries it once the last gate is removed.";
        type Args = NoArgs;

        fn build(_: NoArgs, _: &Handle) -> Result<Self, PluginError> {
            Ok(SchedulingGates)
        }
    }
}

impl PreEnqueuePlugin for SchedulingGates {
    fn pre_enqueue(&self, pod: &PodInfo) -> Status {
        let gates = pod
            .pod
            .spec
            .as_ref()
            .and_then(|spec| spec.scheduling_gates.as_deref())
            .unwrap_or_default();
        if gates.is_empty() {
            return Status::success();
        }
        // Upstream formats the gate names with Go's `%v` of a []string: `[a b]`.
        let names: Vec<&str> = gates.iter().map(|gate| gate.name.as_str()).collect();
        Status::unresolvable(format!(
            "waiting for scheduling gates: [{}]",
            names.join(" ")
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framework::{ExtensionPoint, Plugin, PluginFactory};
    use crate::testing::make_pod;
    use crate::testing::moves_on;

    #[test]
    fn pre_enqueue_matches_upstream_table() {
        // Upstream `TestPreEnqueue`, in order; `None` is a Success status.
        let cases: [(&str, &[&str], Option<Status>); 2] = [
            ("pod does not carry scheduling gates", &[], None),
            (
                "pod carries scheduling gates",
                &["foo", "bar"],
                Some(Status::unresolvable(
                    "waiting for scheduling gates: [foo bar]",
                )),
            ),
        ];
        for (name, gates, want) in cases {
            let got = SchedulingGates.pre_enqueue(&make_pod().scheduling_gates(gates).info());
            assert_eq!(got, want.unwrap_or_default(), "case {name}");
        }
    }

    #[test]
    fn registry_points_match_the_accessors_and_events() {
        let plugin = SchedulingGates;
        assert!(plugin.as_pre_enqueue().is_some());
        assert!(plugin.as_filter().is_none());
        assert_eq!(SchedulingGates::POINTS, &[ExtensionPoint::PreEnqueue]);
        let events = plugin.events_to_register().expect("registers events");
        assert!(moves_on(
            &events,
            EventResource::UnscheduledPod,
            ActionType::UPDATE_POD_SCHEDULING_GATES_ELIMINATED
        ));
        assert!(!moves_on(
            &events,
            EventResource::UnscheduledPod,
            ActionType::UPDATE_POD_LABEL
        ));
    }
}
