use super::*;
use crate::api::Plugins;
use crate::framework::{
    Coupling, DefaultPlugin, Handle, NoArgs, Plugin, PluginError, PluginFactory,
};
use ExtensionPoint::*;

macro_rules! fake_plugin {
        ($ty:ident, [$($point:ident),*]) => {
            fake_plugin!($ty, [$($point),*], []);
        };
        ($ty:ident, [$($point:ident),*], [$($coupling:ident),*]) => {
            struct $ty;
            impl Plugin for $ty {
                fn name(&self) -> &str {
                    stringify!($ty)
                }
            }
            impl PluginFactory for $ty {
                const NAME: &'static str = stringify!($ty);
                const POINTS: &'static [ExtensionPoint] = &[$($point),*];
                const COUPLINGS: &'static [Coupling] = &[$(Coupling::$coupling),*];
                type Args = NoArgs;
                fn build(_: NoArgs, _: &Handle) -> Result<Self, PluginError> {
                    Ok($ty)
                }
            }
        };
    }

fake_plugin!(Sort, [QueueSort]);
fake_plugin!(OtherSort, [QueueSort]);
fake_plugin!(FilterA, [PreFilter, Filter], [FilterNeedsPreFilter]);
fake_plugin!(FilterB, [Filter, Score]);
fake_plugin!(ScoreC, [PreScore, Score], [ScoreNeedsPreScore]);
fake_plugin!(Custom, [Filter, Score]);
// Shaped like NetworkTraffic (Score reads PreScore's query) and NodePorts.
fake_plugin!(Metered, [PreScore, Score], [ScoreNeedsPreScore]);
fake_plugin!(Ported, [PreFilter, Filter], [FilterNeedsPreFilter]);
// Recomputes in Score what PreScore would have given, as NodeAffinity does.
fake_plugin!(Lenient, [PreScore, Score]);
fake_plugin!(Binder1, [Bind]);
fake_plugin!(Binder2, [Bind]);

/// Defaults shaped like upstream's: a multiPoint list with weights.
fn registry() -> Registry {
    let mut r = Registry::new();
    r.register::<Sort>()
        .register::<OtherSort>()
        .register::<FilterA>()
        .register::<FilterB>()
        .register::<ScoreC>()
        .register::<Custom>()
        .register::<Metered>()
        .register::<Ported>()
        .register::<Lenient>()
        .register::<Binder1>()
        .register::<Binder2>();
    r.set_defaults(vec![
        DefaultPlugin::of::<Sort>(),
        DefaultPlugin::of::<FilterA>(),
        DefaultPlugin::of::<FilterB>().weight(3),
        DefaultPlugin::of::<ScoreC>().weight(2),
        DefaultPlugin::of::<Binder1>(),
    ]);
    r
}

fn set(enabled: &[(&str, Option<i32>)], disabled: &[&str]) -> Option<PluginSet> {
    Some(PluginSet {
        enabled: enabled
            .iter()
            .map(|(n, w)| PluginRef {
                name: n.to_string(),
                weight: *w,
            })
            .collect(),
        disabled: disabled.iter().map(|n| PluginRef::named(n)).collect(),
    })
}

fn spec(plugins: Plugins) -> SchedulerProfileSpec {
    SchedulerProfileSpec {
        plugins: Some(plugins),
        ..Default::default()
    }
}

fn names(r: &ResolvedProfile, p: ExtensionPoint) -> Vec<&str> {
    r.plugins_at(p).iter().map(String::as_str).collect()
}

#[test]
fn empty_spec_gives_the_defaults_at_every_point_they_implement() {
    let r = resolve(&SchedulerProfileSpec::default(), &registry()).unwrap();
    assert_eq!(names(&r, QueueSort), ["Sort"]);
    assert_eq!(names(&r, PreFilter), ["FilterA"]);
    assert_eq!(names(&r, Filter), ["FilterA", "FilterB"]);
    assert_eq!(names(&r, PreScore), ["ScoreC"]);
    assert_eq!(names(&r, Score), ["FilterB", "ScoreC"]);
    assert!(r.warnings.is_empty(), "{:?}", r.warnings);
    assert_eq!(names(&r, Bind), ["Binder1"]);
    assert_eq!(r.score_weights["FilterB"], 3);
    assert_eq!(r.score_weights["ScoreC"], 2);
}

#[test]
fn merge_rules_table() {
    struct Case {
        name: &'static str,
        plugins: Plugins,
        point: ExtensionPoint,
        want: &'static [&'static str],
    }
    let cases = [
        Case {
            name: "disabling a default at one point removes it only there",
            plugins: Plugins {
                score: set(&[], &["FilterB"]),
                ..Default::default()
            },
            point: Score,
            want: &["ScoreC"],
        },
        Case {
            name: "star disables every default at the point",
            plugins: Plugins {
                filter: set(&[("Custom", None)], &["*"]),
                ..Default::default()
            },
            point: Filter,
            want: &["Custom"],
        },
        Case {
            name: "re-listing a default at a point without disabling it moves it first (override)",
            plugins: Plugins {
                filter: set(&[("FilterB", None)], &[]),
                ..Default::default()
            },
            point: Filter,
            want: &["FilterB", "FilterA"],
        },
        Case {
            name: "disable then enable at a point moves the default after the multiPoint plugins",
            plugins: Plugins {
                filter: set(&[("FilterA", None)], &["FilterA"]),
                ..Default::default()
            },
            point: Filter,
            want: &["FilterB", "FilterA"],
        },
        Case {
            name: "a non-default plugin enabled at a point runs after the defaults",
            plugins: Plugins {
                filter: set(&[("Custom", None)], &[]),
                ..Default::default()
            },
            point: Filter,
            want: &["FilterA", "FilterB", "Custom"],
        },
        Case {
            name: "multiPoint enables a plugin at every point it implements",
            plugins: Plugins {
                multi_point: set(&[("Custom", None)], &[]),
                ..Default::default()
            },
            point: Score,
            want: &["FilterB", "ScoreC", "Custom"],
        },
        Case {
            name: "a default re-listed in multiPoint keeps its default position",
            plugins: Plugins {
                multi_point: set(&[("FilterA", None)], &[]),
                ..Default::default()
            },
            point: Filter,
            want: &["FilterA", "FilterB"],
        },
        Case {
            name: "multiPoint star drops every default; specific points still add",
            plugins: Plugins {
                multi_point: set(&[("OtherSort", None), ("Binder2", None)], &["*"]),
                filter: set(&[("Custom", None)], &[]),
                ..Default::default()
            },
            point: Filter,
            want: &["Custom"],
        },
        Case {
            name: "a plugin enabled via multiPoint can be disabled at one point",
            plugins: Plugins {
                multi_point: set(&[("Custom", None)], &[]),
                score: set(&[], &["Custom"]),
                ..Default::default()
            },
            point: Score,
            want: &["FilterB", "ScoreC"],
        },
    ];
    for case in cases {
        let r = resolve(&spec(case.plugins), &registry())
            .unwrap_or_else(|e| panic!("{}: {e:?}", case.name));
        assert_eq!(names(&r, case.point), case.want, "{}", case.name);
    }
}

#[test]
fn weights_come_from_the_point_then_multi_point_then_one() {
    let r = resolve(
        &spec(Plugins {
            multi_point: set(&[("Custom", Some(7)), ("FilterB", Some(5))], &[]),
            score: set(&[("ScoreC", None)], &[]),
            ..Default::default()
        }),
        &registry(),
    )
    .unwrap();
    assert_eq!(r.score_weights["Custom"], 7);
    assert_eq!(
        r.score_weights["FilterB"], 5,
        "multiPoint re-listing replaces the default weight"
    );
    assert_eq!(
        r.score_weights["ScoreC"], 1,
        "a point entry without weight means 1"
    );
}

#[test]
fn errors_name_the_field_and_are_all_collected() {
    let err = resolve(
        &spec(Plugins {
            filter: set(&[("Nope", None), ("Sort", None)], &[]),
            score: set(&[("ScoreC", Some(0)), ("ScoreC", Some(101))], &[]),
            queue_sort: set(&[("OtherSort", None)], &[]),
            ..Default::default()
        }),
        &registry(),
    )
    .unwrap_err();
    let paths: Vec<&str> = err.iter().map(|e| e.path.as_str()).collect();
    assert!(
        paths.contains(&"spec.plugins.filter.enabled[0].name"),
        "{paths:?}"
    );
    assert!(
        paths.contains(&"spec.plugins.filter.enabled[1].name"),
        "Sort is not a Filter plugin: {paths:?}"
    );
    assert!(
        paths.contains(&"spec.plugins.score.enabled[0].weight"),
        "{paths:?}"
    );
    assert!(
        paths.contains(&"spec.plugins.score.enabled[1].weight"),
        "{paths:?}"
    );
    assert!(
        paths.contains(&"spec.plugins.score.enabled[1].name"),
        "duplicate: {paths:?}"
    );
    assert!(
        paths.contains(&"spec.plugins.queueSort"),
        "two QueueSort plugins: {paths:?}"
    );
    let weight = err
        .iter()
        .find(|e| e.path == "spec.plugins.score.enabled[1].weight")
        .unwrap();
    assert_eq!(weight.value, "101");
}

#[test]
fn a_profile_without_binder_is_rejected() {
    let err = resolve(
        &spec(Plugins {
            bind: set(&[], &["*"]),
            ..Default::default()
        }),
        &registry(),
    )
    .unwrap_err();
    assert_eq!(err[0].path, "spec.plugins.bind");
}

#[test]
fn backoff_bounds_are_checked() {
    let bad = SchedulerProfileSpec {
        pod_initial_backoff_seconds: Some(5),
        pod_max_backoff_seconds: Some(2),
        ..Default::default()
    };
    let err = resolve(&bad, &registry()).unwrap_err();
    assert_eq!(err[0].path, "spec.podMaxBackoffSeconds");
    let ok = resolve(&SchedulerProfileSpec::default(), &registry()).unwrap();
    assert_eq!(
        ok.backoff,
        (Duration::from_secs(1), Duration::from_secs(10))
    );
}

#[test]
fn coupled_pre_points_are_added_table() {
    struct Case {
        name: &'static str,
        plugins: Plugins,
        point: ExtensionPoint,
        want: &'static [&'static str],
    }
    let cases = [
        Case {
            name: "the tutorials' score-only shape gets its PreScore, after the point's own plugins",
            plugins: Plugins {
                score: set(&[("Metered", None)], &["*"]),
                ..Default::default()
            },
            point: PreScore,
            want: &["ScoreC", "Metered"],
        },
        Case {
            name: "and runs at Score alone",
            plugins: Plugins {
                score: set(&[("Metered", None)], &["*"]),
                ..Default::default()
            },
            point: Score,
            want: &["Metered"],
        },
        Case {
            name: "a filter-only plugin gets its PreFilter",
            plugins: Plugins {
                filter: set(&[("Ported", None)], &[]),
                ..Default::default()
            },
            point: PreFilter,
            want: &["FilterA", "Ported"],
        },
        Case {
            name: "a star at the pre-point drops the defaults there but not the coupling",
            plugins: Plugins {
                pre_score: set(&[], &["*"]),
                score: set(&[("Metered", None)], &[]),
                ..Default::default()
            },
            point: PreScore,
            want: &["ScoreC", "Metered"],
        },
        Case {
            name: "added pre-points follow the order of the point that needs them",
            plugins: Plugins {
                pre_score: set(&[], &["*"]),
                score: set(&[("Metered", None), ("ScoreC", None)], &["*"]),
                ..Default::default()
            },
            point: PreScore,
            want: &["Metered", "ScoreC"],
        },
        Case {
            name: "a pre-point the user listed keeps its place",
            plugins: Plugins {
                pre_score: set(&[("Metered", None)], &[]),
                score: set(&[("Metered", None)], &[]),
                ..Default::default()
            },
            point: PreScore,
            want: &["ScoreC", "Metered"],
        },
        Case {
            name: "a plugin that recomputes in Score is not coupled",
            plugins: Plugins {
                score: set(&[("Lenient", None)], &["*"]),
                ..Default::default()
            },
            point: PreScore,
            want: &["ScoreC"],
        },
    ];
    for case in cases {
        let r = resolve(&spec(case.plugins), &registry())
            .unwrap_or_else(|e| panic!("{}: {e:?}", case.name));
        assert_eq!(names(&r, case.point), case.want, "{}", case.name);
    }
}

#[test]
fn the_effective_list_shows_the_coupled_pre_point() {
    let r = resolve(
        &spec(Plugins {
            score: set(&[("Metered", Some(5))], &["*"]),
            ..Default::default()
        }),
        &registry(),
    )
    .unwrap();
    let effective = r.effective();
    assert_eq!(effective.pre_score, ["ScoreC", "Metered"]);
    assert_eq!(
        effective.score,
        [WeightedPlugin {
            name: "Metered".into(),
            weight: 5
        }]
    );
}

#[test]
fn disabling_a_coupled_pre_point_by_name_is_rejected_table() {
    struct Case {
        name: &'static str,
        plugins: Plugins,
        path: &'static str,
        value: &'static str,
        enabled_by: &'static str,
    }
    let cases = [
        Case {
            name: "enabled at score, disabled at preScore",
            plugins: Plugins {
                pre_score: set(&[], &["Metered"]),
                score: set(&[("Metered", None)], &["*"]),
                ..Default::default()
            },
            path: "spec.plugins.preScore.disabled[0].name",
            value: "\"Metered\"",
            enabled_by: "spec.plugins.score.enabled[0].name",
        },
        Case {
            name: "enabled through multiPoint, disabled at preFilter",
            plugins: Plugins {
                multi_point: set(&[("Custom", None), ("Ported", None)], &[]),
                pre_filter: set(&[], &["FilterA", "Ported"]),
                filter: set(&[], &["FilterA"]),
                ..Default::default()
            },
            path: "spec.plugins.preFilter.disabled[1].name",
            value: "\"Ported\"",
            enabled_by: "spec.plugins.multiPoint.enabled[1].name",
        },
        Case {
            name: "a default plugin disabled at its pre-point only",
            plugins: Plugins {
                pre_score: set(&[], &["ScoreC"]),
                ..Default::default()
            },
            path: "spec.plugins.preScore.disabled[0].name",
            value: "\"ScoreC\"",
            enabled_by: "the default plugin set",
        },
    ];
    for case in cases {
        let errors = resolve(&spec(case.plugins), &registry())
            .err()
            .unwrap_or_else(|| panic!("{}: accepted", case.name));
        assert_eq!(errors.len(), 1, "{}: {errors:?}", case.name);
        let error = &errors[0];
        assert_eq!(error.path, case.path, "{}", case.name);
        assert_eq!(error.value, case.value, "{}", case.name);
        let shown = error.to_string();
        assert!(
            shown.starts_with(&format!("{}: Invalid value: {}: ", case.path, case.value))
                && shown.contains(case.enabled_by),
            "{}: {shown}",
            case.name
        );
    }
}

#[test]
fn disabling_the_point_as_well_is_accepted() {
    let r = resolve(
        &spec(Plugins {
            pre_score: set(&[], &["ScoreC"]),
            score: set(&[], &["ScoreC"]),
            ..Default::default()
        }),
        &registry(),
    )
    .unwrap();
    assert!(!r.plugins_at(PreScore).contains(&"ScoreC".to_string()));
    assert!(!r.plugins_at(Score).contains(&"ScoreC".to_string()));
}

#[test]
fn pre_score_without_score_warns_table() {
    struct Case {
        name: &'static str,
        plugins: Plugins,
        want: &'static [&'static str],
    }
    let cases = [
        Case {
            name: "multiPoint plus score star",
            plugins: Plugins {
                multi_point: set(&[("Metered", None)], &[]),
                score: set(&[("FilterB", None)], &["*"]),
                ..Default::default()
            },
            want: &[
                "spec.plugins.score.disabled[0].name: Metered runs at PreScore but not at Score",
            ],
        },
        Case {
            name: "multiPoint plus score disabled by name",
            plugins: Plugins {
                multi_point: set(&[("Metered", None)], &[]),
                score: set(&[], &["FilterB", "Metered"]),
                ..Default::default()
            },
            want: &[
                "spec.plugins.score.disabled[1].name: Metered runs at PreScore but not at Score",
            ],
        },
        Case {
            name: "enabled at preScore only",
            plugins: Plugins {
                pre_score: set(&[("Lenient", None)], &[]),
                ..Default::default()
            },
            want: &[
                "spec.plugins.preScore.enabled[0].name: Lenient runs at PreScore but not at Score",
            ],
        },
        Case {
            name: "defaults left at PreScore by a score star are not the profile's doing",
            plugins: Plugins {
                score: set(&[("FilterB", None)], &["*"]),
                ..Default::default()
            },
            want: &[],
        },
        Case {
            name: "multiPoint with its Score running",
            plugins: Plugins {
                multi_point: set(&[("Metered", None)], &[]),
                ..Default::default()
            },
            want: &[],
        },
    ];
    for case in cases {
        let r = resolve(&spec(case.plugins), &registry())
            .unwrap_or_else(|e| panic!("{}: {e:?}", case.name));
        assert_eq!(
            r.warnings.len(),
            case.want.len(),
            "{}: {:?}",
            case.name,
            r.warnings
        );
        for (warning, want) in r.warnings.iter().zip(case.want) {
            assert!(warning.starts_with(want), "{}: {warning}", case.name);
        }
    }
}
