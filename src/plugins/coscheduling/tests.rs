//! The Coscheduling tables run twice: with berth's PodGroup and its label, and with
//! scheduler-plugins' PodGroup (`scheduling.x-k8s.io/v1alpha1`) and its label, which
//! must behave the same.

mod berth {
    const SCHEDULER_PLUGINS: bool = false;
    include!("tests/tables.rs");
}

mod scheduler_plugins {
    const SCHEDULER_PLUGINS: bool = true;
    include!("tests/tables.rs");
}
