//! Issue 30 through `berth simulate`: the GPU scenario (examples/scenarios/gpus.yaml). A
//! GPU DeviceClass that also serves `example.com/gpu`, node-a with four GPUs (two per
//! PCIe root), node-b with two on one root; pods asking for one GPU through a template,
//! two as an extended resource, two on one PCIe root, and three on one PCIe root, which
//! no node has.
//!
//! Expected from the specification: upstream's allocator gives each request distinct
//! devices of the class on the chosen node, never a device another claim holds; a claim
//! no node can satisfy is rejected with DynamicResources' `cannot allocate all claims`,
//! which is UnschedulableAndUnresolvable, so preemption finds no candidate; kube-scheduler
//! 1.37's PostFilter adds no text when it frees nothing.

mod support;

use std::collections::{BTreeMap, HashSet};
use std::path::PathBuf;

use support::simulate::{pod, simulate_default};

use berth::simulate::input::load_files;
use berth::simulate::report::PodResult;

const TRAINER: &str = "0/2 nodes are available: 2 cannot allocate all claims. preemption: \
     0/2 nodes are available: 2 Preemption is not helpful for scheduling.";

/// The PCIe root of each GPU of the scenario, by `driver/pool/device`.
fn pcie_roots() -> BTreeMap<&'static str, &'static str> {
    BTreeMap::from([
        ("gpu.example.com/node-a/gpu-0", "pci-0"),
        ("gpu.example.com/node-a/gpu-1", "pci-0"),
        ("gpu.example.com/node-a/gpu-2", "pci-1"),
        ("gpu.example.com/node-a/gpu-3", "pci-1"),
        ("gpu.example.com/node-b/gpu-0", "pci-0"),
        ("gpu.example.com/node-b/gpu-1", "pci-0"),
    ])
}

#[tokio::test]
async fn gpus_are_allocated_once_each_and_the_impossible_claim_is_refused() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/scenarios/gpus.yaml");
    let (input, _warnings) = load_files(&[path]).expect("input loads");
    let report = simulate_default(input).await;
    let roots = pcie_roots();

    let mut taken = HashSet::new();
    for (name, count, claim_prefix, same_root) in [
        ("inference", 1, "inference-gpu-", false),
        ("render", 2, "render-extended-resources-", false),
        ("pair", 2, "pair-gpus", true),
    ] {
        let placed = pod(&report, name);
        assert_eq!(placed.result, PodResult::Scheduled, "{placed:#?}");
        let node = placed.node.clone().expect("bound");
        assert_eq!(placed.devices.len(), count, "{name}: {:#?}", placed.devices);
        for device in &placed.devices {
            assert!(device.claim.starts_with(claim_prefix), "{name}: {device:?}");
            assert!(
                device
                    .device
                    .starts_with(&format!("gpu.example.com/{node}/")),
                "{name}: a device of its node: {device:?}"
            );
            assert!(
                taken.insert(device.device.clone()),
                "{name}: {device:?} twice"
            );
        }
        if same_root {
            let used: HashSet<&str> = placed
                .devices
                .iter()
                .map(|d| roots[d.device.as_str()])
                .collect();
            assert_eq!(
                used.len(),
                1,
                "{name}: one PCIe root: {:#?}",
                placed.devices
            );
        }
    }
    // The extended resource's claim maps the container's request, as upstream names it:
    // the resource is the container's second request, after cpu.
    assert!(
        pod(&report, "render")
            .devices
            .iter()
            .all(|d| d.request == "container-0-request-1")
    );

    let trainer = pod(&report, "trainer");
    assert_eq!(trainer.result, PodResult::Unschedulable, "{trainer:#?}");
    assert_eq!(trainer.message, TRAINER);
    assert!(trainer.devices.is_empty());
    assert_eq!(trainer.nominated_node, None);
    assert!(report.evicted.is_empty());
}
