//! The extension points of the scheduling framework, as names: profiles list plugins per
//! point, and the framework runs them in this order.

/// The extension points of the scheduling framework, in the order a pod meets them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ExtensionPoint {
    PreEnqueue,
    QueueSort,
    PreFilter,
    Filter,
    PostFilter,
    PreScore,
    Score,
    Reserve,
    Permit,
    PreBind,
    Bind,
    PostBind,
}

impl ExtensionPoint {
    /// Every point, in the order a pod meets them.
    pub const ALL: [ExtensionPoint; 12] = [
        ExtensionPoint::PreEnqueue,
        ExtensionPoint::QueueSort,
        ExtensionPoint::PreFilter,
        ExtensionPoint::Filter,
        ExtensionPoint::PostFilter,
        ExtensionPoint::PreScore,
        ExtensionPoint::Score,
        ExtensionPoint::Reserve,
        ExtensionPoint::Permit,
        ExtensionPoint::PreBind,
        ExtensionPoint::Bind,
        ExtensionPoint::PostBind,
    ];

    /// The upstream name, e.g. `PreFilter`.
    pub fn name(self) -> &'static str {
        match self {
            ExtensionPoint::PreEnqueue => "PreEnqueue",
            ExtensionPoint::QueueSort => "QueueSort",
            ExtensionPoint::PreFilter => "PreFilter",
            ExtensionPoint::Filter => "Filter",
            ExtensionPoint::PostFilter => "PostFilter",
            ExtensionPoint::PreScore => "PreScore",
            ExtensionPoint::Score => "Score",
            ExtensionPoint::Reserve => "Reserve",
            ExtensionPoint::Permit => "Permit",
            ExtensionPoint::PreBind => "PreBind",
            ExtensionPoint::Bind => "Bind",
            ExtensionPoint::PostBind => "PostBind",
        }
    }

    /// The lowerCamelCase field name used in `spec.plugins`, e.g. `preFilter`.
    pub fn field_name(self) -> &'static str {
        match self {
            ExtensionPoint::PreEnqueue => "preEnqueue",
            ExtensionPoint::QueueSort => "queueSort",
            ExtensionPoint::PreFilter => "preFilter",
            ExtensionPoint::Filter => "filter",
            ExtensionPoint::PostFilter => "postFilter",
            ExtensionPoint::PreScore => "preScore",
            ExtensionPoint::Score => "score",
            ExtensionPoint::Reserve => "reserve",
            ExtensionPoint::Permit => "permit",
            ExtensionPoint::PreBind => "preBind",
            ExtensionPoint::Bind => "bind",
            ExtensionPoint::PostBind => "postBind",
        }
    }
}

impl std::fmt::Display for ExtensionPoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
