use super::*;

fn entry(name: &str, weight: Option<i32>) -> Entry {
    Entry {
        name: name.into(),
        weight,
        path: Some(String::new()),
    }
}

#[test]
fn merge_follows_upstreams_merge_plugin_set() {
    const DEFAULTS: &[(&str, i32)] = &[("A", 1), ("B", 2), ("C", 3)];
    let cases = [
        (
            "nothing custom keeps the defaults",
            vec![],
            vec![],
            vec![("A", Some(1)), ("B", Some(2)), ("C", Some(3))],
        ),
        (
            "disabled by name",
            vec![],
            vec!["B"],
            vec![("A", Some(1)), ("C", Some(3))],
        ),
        (
            "star disables every default",
            vec![entry("D", None)],
            vec!["*"],
            vec![("D", None)],
        ),
        (
            "a re-enabled default keeps its place with the new weight",
            vec![entry("D", Some(4)), entry("B", Some(9))],
            vec![],
            vec![
                ("A", Some(1)),
                ("B", Some(9)),
                ("C", Some(3)),
                ("D", Some(4)),
            ],
        ),
        (
            "disabled then enabled moves it last",
            vec![entry("A", Some(5))],
            vec!["A"],
            vec![("B", Some(2)), ("C", Some(3)), ("A", Some(5))],
        ),
    ];
    for (name, enabled, disabled, want) in cases {
        let custom = LegacySet {
            enabled,
            disabled: disabled.into_iter().map(String::from).collect(),
        };
        let got: Vec<(String, Option<i32>)> = merge(DEFAULTS, &custom)
            .into_iter()
            .map(|e| (e.name, e.weight))
            .collect();
        let want: Vec<(String, Option<i32>)> =
            want.into_iter().map(|(n, w)| (n.to_string(), w)).collect();
        assert_eq!(got, want, "{name}");
    }
}

#[test]
fn points_each_version_names() {
    use ExtensionPoint::*;
    let cases = [
        (
            Version::V1alpha1,
            "postFilter",
            Some(LegacyPoint::At(PreScore)),
        ),
        (Version::V1alpha1, "preScore", None),
        (Version::V1alpha1, "unreserve", Some(LegacyPoint::Unreserve)),
        (Version::V1alpha2, "postFilter", None),
        (
            Version::V1alpha2,
            "preScore",
            Some(LegacyPoint::At(PreScore)),
        ),
        (
            Version::V1beta1,
            "postFilter",
            Some(LegacyPoint::At(PostFilter)),
        ),
        (Version::V1beta1, "unreserve", None),
        (Version::V1beta1, "multiPoint", None),
        (Version::V1beta1, "preEnqueue", None),
        (
            Version::V1beta2,
            "multiPoint",
            Some(LegacyPoint::MultiPoint),
        ),
        (
            Version::V1beta2,
            "preEnqueue",
            Some(LegacyPoint::At(PreEnqueue)),
        ),
    ];
    for (version, key, want) in cases {
        assert_eq!(version.point(key), want, "{version:?} {key}");
    }
}

#[test]
fn default_score_weights_per_version() {
    let weight = |version: Version, plugin: &str| {
        version
            .defaults(ExtensionPoint::Score)
            .iter()
            .find(|(name, _)| *name == plugin)
            .map(|(_, w)| *w)
    };
    let cases = [
        (Version::V1alpha2, "PodTopologySpread", Some(1)),
        (Version::V1beta1, "PodTopologySpread", Some(2)),
        (Version::V1beta1, "NodePreferAvoidPods", Some(10000)),
        (Version::V1beta2, "NodePreferAvoidPods", None),
        (Version::V1beta2, "NodeResourcesLeastAllocated", None),
        (Version::V1beta2, "NodeResourcesFit", Some(1)),
        (Version::V1beta2, "TaintToleration", Some(1)),
    ];
    for (version, plugin, want) in cases {
        assert_eq!(weight(version, plugin), want, "{version:?} {plugin}");
    }
}
