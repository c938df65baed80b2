//! Device selectors in CEL, as upstream evaluates them (dynamic-resource-allocation's
//! `cel` package), on the `cel` interpreter.
//!
//! A selector sees one variable, `device`: `driver`, `allowMultipleAllocations`,
//! `attributes` (domain → id → value; an attribute named without a domain is the
//! driver's) and `capacity` (domain → id → quantity). Looking up a domain the device does
//! not have gives an empty map, looking up a missing id is an error, as upstream. Values
//! are ints, bools, strings, lists of those, semantic versions (`kubernetes.Semver`) and
//! quantities (`kubernetes.Quantity`), with upstream's library on them: `quantity()`,
//! `isQuantity()`, `sign()`, `compareTo`, `isGreaterThan`, `isLessThan`, `add`, `sub`,
//! `asInteger`, `isInteger`, `asApproximateFloat`; `semver()` (with upstream's
//! normalising form), `isSemver()`, `major`, `minor`, `patch` and the comparisons;
//! `cel.bind`, `includes`, the strings, lists, sets and regex extensions.
//!
//! Where this differs from cel-go (docs/plugins.md lists it for users):
//! - There is no type checker: an expression the API server would reject as ill-typed
//!   fails when it is evaluated, as a runtime error, not when it is compiled. The API
//!   server validates every selector it stores, so the allocator only meets such
//!   expressions in `berth simulate` input.
//! - The cost limit (1,000,000 per evaluation) is counted per comprehension step with
//!   each step's size as its cost, an approximation of cel-go's runtime cost: runaway
//!   expressions stop with upstream's message, but the point where they stop differs.
//! - An error inside `exists`/`all` ends the evaluation even where cel-go would let
//!   another element decide; numbers of different types are never equal (`1 == 1.0`);
//!   quantities are exact to a nano-unit up to `i64::MAX` units.
//! - Runtime error texts come from this interpreter, inside upstream's wrapping
//!   (`CEL runtime error: …`); a missing key reads `no such key: <key>` with upstream's
//!   hint appended.

use std::cell::Cell;
use std::cmp::Ordering;
use std::collections::HashMap;
use std::sync::{Arc, PoisonError, RwLock};

use cel::common::ast::{CallExpr, Expr, IdedExpr, LiteralValue};
use cel::objects::{Key, Map, Opaque};
use cel::parser::Parser;
use cel::{Context, ExecutionError, FunctionContext, ResolveResult, Value};
use k8s_openapi::api::resource::v1::{Device, DeviceAttribute};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

use super::quantity::Amount;

/// Upstream `CELSelectorExpressionMaxCost`.
pub const MAX_COST: u64 = 1_000_000;

/// Compiled expressions kept; past this the cache starts over.
const CACHE_SIZE: usize = 1024;

/// Upstream's hint for a missing key (`EnhanceRuntimeError`).
const NO_SUCH_KEY_HINT: &str = ". consider using CEL optional chaining (.? followed by orValue()) or guarding the check with has() for optional fields";

/// Why a selector has no answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SelectorError {
    /// The expression does not parse.
    Compile(String),
    /// Evaluating it failed.
    Runtime(String),
}

/// The selector engine: the function library, built once, and the parsed expressions.
pub struct Selectors {
    root: Context<'static>,
    compiled: RwLock<HashMap<String, Arc<Result<IdedExpr, String>>>>,
}

impl Default for Selectors {
    fn default() -> Self {
        Selectors::new()
    }
}

impl std::fmt::Debug for Selectors {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Selectors").finish_non_exhaustive()
    }
}

thread_local! {
    /// The cost spent by the evaluation running on this thread.
    static COST: Cell<u64> = const { Cell::new(0) };
    /// Set when the evaluation went over the limit, even if `||` swallowed the error.
    static OVER: Cell<bool> = const { Cell::new(false) };
}

impl Selectors {
    pub fn new() -> Selectors {
        let mut root = Context::default();
        kube::core::cel::KubeCelExt::register_all(&mut root);
        for (name, function) in LIBRARY {
            root.add_function(name, *function);
        }
        Selectors {
            root,
            compiled: RwLock::new(HashMap::new()),
        }
    }

    /// Parses `expression`, from the cache when it was parsed before. Filter evaluates
    /// on every worker thread at once, so a hit takes only the read lock.
    fn compile(&self, expression: &str) -> Arc<Result<IdedExpr, String>> {
        let cached = self
            .compiled
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(expression)
            .cloned();
        if let Some(hit) = cached {
            return hit;
        }
        let parsed = Parser::new()
            .enable_optional_syntax(true)
            .parse(expression)
            .map(|mut expr| {
                rewrite(&mut expr);
                expr
            })
            .map_err(|e| format!("compilation failed: {e}"));
        let parsed = Arc::new(parsed);
        let mut cache = self
            .compiled
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        if cache.len() >= CACHE_SIZE {
            cache.clear();
        }
        cache.insert(expression.to_string(), parsed.clone());
        parsed
    }

    /// Whether `expression` selects `device` of `driver`.
    pub fn evaluate(
        &self,
        expression: &str,
        driver: &str,
        device: &Device,
    ) -> Result<bool, SelectorError> {
        let compiled = self.compile(expression);
        let expr = match compiled.as_ref() {
            Ok(expr) => expr,
            Err(e) => return Err(SelectorError::Compile(e.clone())),
        };
        let value = device_value(driver, device).map_err(SelectorError::Runtime)?;
        let mut scope = self.root.new_inner_scope();
        scope.add_variable_from_value("device", value);
        COST.with(|c| c.set(0));
        OVER.with(|o| o.set(false));
        let outcome =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| scope.resolve(expr)));
        if OVER.with(Cell::get) {
            return Err(SelectorError::Runtime(
                "operation cancelled: actual cost limit exceeded".into(),
            ));
        }
        match outcome {
            Ok(Ok(Value::Bool(b))) => Ok(b),
            Ok(Ok(other)) => Err(SelectorError::Runtime(format!(
                "CEL result of type {} could not be converted to bool: type conversion error from {} to 'bool'",
                type_name(&other),
                type_name(&other)
            ))),
            Ok(Err(e)) => Err(SelectorError::Runtime(error_text(&e))),
            Err(_) => Err(SelectorError::Runtime("integer overflow".into())),
        }
    }
}

/// A runtime error as upstream words it, where the words differ.
fn error_text(error: &ExecutionError) -> String {
    match error {
        ExecutionError::NoSuchKey(key) => format!("no such key: {key}{NO_SUCH_KEY_HINT}"),
        ExecutionError::NoSuchOverload => "no such overload".into(),
        ExecutionError::UndeclaredReference(name) => {
            format!("undeclared reference to '{name}' (in container '')")
        }
        ExecutionError::DivisionByZero(_) => "division by zero".into(),
        ExecutionError::RemainderByZero(_) => "modulus by zero".into(),
        ExecutionError::FunctionError { message, .. } => message.clone(),
        other => {
            let text = other.to_string();
            if text.contains("No such key:") {
                format!(
                    "{}{NO_SUCH_KEY_HINT}",
                    text.replace("No such key:", "no such key:")
                )
            } else {
                text
            }
        }
    }
}

/// cel-go's name of a value's type.
fn type_name(value: &Value) -> String {
    match value {
        Value::List(_) => "list".into(),
        Value::Map(_) => "map".into(),
        Value::Int(_) => "int".into(),
        Value::UInt(_) => "uint".into(),
        Value::Float(_) => "double".into(),
        Value::String(_) => "string".into(),
        Value::Bytes(_) => "bytes".into(),
        Value::Bool(_) => "bool".into(),
        Value::Null => "null_type".into(),
        Value::Opaque(o) => o.runtime_type_name().to_string(),
        Value::Function(..) => "function".into(),
        _ => "dyn".into(),
    }
}

fn string(s: &str) -> Value {
    Value::String(Arc::new(s.to_string()))
}

fn map_value(entries: HashMap<Key, Value>) -> Value {
    Value::Map(Map {
        map: Arc::new(entries),
    })
}

/// The `device` variable.
fn device_value(driver: &str, device: &Device) -> Result<Value, String> {
    let mut attributes: HashMap<String, HashMap<Key, Value>> = HashMap::new();
    for (name, attribute) in device.attributes.iter().flatten() {
        let (domain, id) = match name.split_once('/') {
            Some((domain, id)) => (domain, id),
            None => (driver, name.as_str()),
        };
        let value = attribute_value(name, attribute)?;
        attributes
            .entry(domain.to_string())
            .or_default()
            .insert(Key::String(Arc::new(id.to_string())), value);
    }
    let mut capacity: HashMap<String, HashMap<Key, Value>> = HashMap::new();
    for (name, cap) in device.capacity.iter().flatten() {
        let (domain, id) = match name.split_once('/') {
            Some((domain, id)) => (domain, id),
            None => (driver, name.as_str()),
        };
        let amount = Amount::parse(name, &cap.value).map_err(|e| e.to_string())?;
        capacity.entry(domain.to_string()).or_default().insert(
            Key::String(Arc::new(id.to_string())),
            quantity_value(amount),
        );
    }
    let nest = |outer: HashMap<String, HashMap<Key, Value>>| {
        map_value(
            outer
                .into_iter()
                .map(|(k, v)| (Key::String(Arc::new(k)), map_value(v)))
                .collect(),
        )
    };
    let mut fields = HashMap::new();
    fields.insert(Key::String(Arc::new("driver".into())), string(driver));
    fields.insert(
        Key::String(Arc::new("allowMultipleAllocations".into())),
        Value::Bool(device.allow_multiple_allocations == Some(true)),
    );
    fields.insert(Key::String(Arc::new("attributes".into())), nest(attributes));
    fields.insert(Key::String(Arc::new("capacity".into())), nest(capacity));
    Ok(map_value(fields))
}

/// An attribute's value: the first of its list or scalar fields that is set.
fn attribute_value(name: &str, attribute: &DeviceAttribute) -> Result<Value, String> {
    let version = |v: &str| {
        Semver::parse(v)
            .map(|s| Value::Opaque(Arc::new(s)))
            .map_err(|e| format!("attribute {name}: parse semantic version: {e}"))
    };
    let list = |values: Vec<Value>| Value::List(Arc::new(values));
    if let Some(v) = &attribute.ints {
        return Ok(list(v.iter().map(|i| Value::Int(*i)).collect()));
    }
    if let Some(v) = &attribute.bools {
        return Ok(list(v.iter().map(|b| Value::Bool(*b)).collect()));
    }
    if let Some(v) = &attribute.strings {
        return Ok(list(v.iter().map(|s| string(s)).collect()));
    }
    if let Some(v) = &attribute.versions {
        return Ok(list(
            v.iter().map(|s| version(s)).collect::<Result<_, _>>()?,
        ));
    }
    if let Some(i) = attribute.int {
        return Ok(Value::Int(i));
    }
    if let Some(b) = attribute.bool {
        return Ok(Value::Bool(b));
    }
    if let Some(s) = &attribute.string {
        return Ok(string(s));
    }
    if let Some(v) = &attribute.version {
        return version(v);
    }
    Err(format!("attribute {name}: unsupported attribute value"))
}

// ---------------------------------------------------------------------------------------
// Rewrites before evaluation.

fn is_device_map(expr: &IdedExpr) -> bool {
    matches!(&expr.expr, Expr::Select(s)
        if !s.test
            && (s.field == "attributes" || s.field == "capacity")
            && matches!(&s.operand.expr, Expr::Ident(i) if i == "device"))
}

/// The node count of an expression: one comprehension step's cost.
fn size(expr: &IdedExpr) -> u64 {
    1 + match &expr.expr {
        Expr::Call(c) => c.target.as_deref().map_or(0, size) + c.args.iter().map(size).sum::<u64>(),
        Expr::Select(s) => size(&s.operand),
        Expr::List(l) => l.elements.iter().map(size).sum(),
        Expr::Comprehension(c) => size(&c.loop_step) + size(&c.loop_cond) + size(&c.iter_range),
        _ => 0,
    }
}

/// Rewrites an expression for this interpreter: a domain looked up in
/// `device.attributes` or `device.capacity` defaults to an empty map; `x.?f` becomes
/// `x[?"f"]` (the interpreter's `.?` fails on a missing key); a comprehension over what
/// is not a list or map fails with cel-go's message; every comprehension step counts
/// its cost.
fn rewrite(expr: &mut IdedExpr) {
    let id = expr.id;
    let mut replacement = None;
    match &mut expr.expr {
        Expr::Call(call) => {
            if let Some(target) = call.target.as_deref_mut() {
                rewrite(target);
            }
            for arg in &mut call.args {
                rewrite(arg);
            }
            if call.func_name == "_[_]"
                && call.target.is_none()
                && call.args.len() == 2
                && is_device_map(&call.args[0])
            {
                call.func_name = "@dra_domain".into();
            }
            if call.func_name == "_?._" {
                call.func_name = "_[?_]".into();
            }
        }
        Expr::Select(select) => {
            rewrite(&mut select.operand);
            if !select.test && is_device_map(&select.operand) {
                let key = IdedExpr {
                    id,
                    expr: Expr::Literal(LiteralValue::String(select.field.clone().into())),
                };
                replacement = Some(Expr::Call(CallExpr {
                    func_name: "@dra_domain".into(),
                    target: None,
                    args: vec![(*select.operand).clone(), key],
                }));
            }
        }
        Expr::Comprehension(comprehension) => {
            rewrite(&mut comprehension.iter_range);
            wrap(&mut comprehension.iter_range, "@dra_iterable", None);
            rewrite(&mut comprehension.accu_init);
            rewrite(&mut comprehension.loop_cond);
            rewrite(&mut comprehension.loop_step);
            rewrite(&mut comprehension.result);
            let cost = size(&comprehension.loop_step) + size(&comprehension.loop_cond);
            let cost = i64::try_from(cost).unwrap_or(i64::MAX);
            wrap(&mut comprehension.loop_step, "@dra_cost", Some(cost));
        }
        Expr::List(list) => {
            for element in &mut list.elements {
                rewrite(element);
            }
        }
        Expr::Map(map) => {
            for entry in &mut map.entries {
                if let cel::common::ast::EntryExpr::MapEntry(e) = &mut entry.expr {
                    rewrite(&mut e.key);
                    rewrite(&mut e.value);
                }
            }
        }
        _ => {}
    }
    if let Some(r) = replacement {
        expr.expr = r;
    }
}

/// Replaces `expr` by a call of `function` on it, after the integer `first` if given.
fn wrap(expr: &mut IdedExpr, function: &str, first: Option<i64>) {
    let id = expr.id;
    let placeholder = IdedExpr {
        id,
        expr: Expr::Literal(LiteralValue::Null),
    };
    let inner = std::mem::replace(expr, placeholder);
    let mut args: Vec<IdedExpr> = first
        .map(|n| IdedExpr {
            id,
            expr: Expr::Literal(LiteralValue::Int(n.into())),
        })
        .into_iter()
        .collect();
    args.push(inner);
    expr.expr = Expr::Call(CallExpr {
        func_name: function.into(),
        target: None,
        args,
    });
}

// ---------------------------------------------------------------------------------------
// The function library.

type Function = fn(&FunctionContext) -> ResolveResult;

const LIBRARY: &[(&str, Function)] = &[
    ("@dra_domain", dra_domain),
    ("@dra_cost", dra_cost),
    ("@dra_iterable", dra_iterable),
    ("cel.bind", cel_bind),
    ("includes", includes),
    ("quantity", quantity),
    ("isQuantity", is_quantity),
    ("sign", sign),
    ("asInteger", as_integer),
    ("isInteger", is_integer),
    ("asApproximateFloat", as_approximate_float),
    ("add", add),
    ("sub", sub),
    ("isGreaterThan", is_greater_than),
    ("isLessThan", is_less_than),
    ("compareTo", compare_to),
    ("semver", semver),
    ("isSemver", is_semver),
    ("major", major),
    ("minor", minor),
    ("patch", patch),
];

/// The receiver and the arguments, evaluated: `x.f(a)` and `f(x, a)` alike.
fn operands(ftx: &FunctionContext) -> Result<Vec<Value>, ExecutionError> {
    let mut values = Vec::with_capacity(ftx.args.len() + 1);
    if let Some(this) = &ftx.this {
        values.push(this.clone());
    }
    for arg in ftx.args {
        values.push(ftx.ptx.resolve(arg)?);
    }
    Ok(values)
}

fn fail(ftx: &FunctionContext, message: impl ToString) -> ExecutionError {
    ftx.error(message)
}

fn dra_domain(ftx: &FunctionContext) -> ResolveResult {
    let values = operands(ftx)?;
    match values.as_slice() {
        [Value::Map(outer), Value::String(key)] => Ok(outer
            .get(&Key::String(key.clone()))
            .cloned()
            .unwrap_or_else(|| map_value(HashMap::new()))),
        [outer, key] => Err(ExecutionError::UnsupportedIndex(key.clone(), outer.clone())),
        _ => Err(ExecutionError::NoSuchOverload),
    }
}

fn dra_cost(ftx: &FunctionContext) -> ResolveResult {
    let [cost, step] = ftx.args else {
        return Err(ExecutionError::NoSuchOverload);
    };
    let cost = match &cost.expr {
        Expr::Literal(LiteralValue::Int(c)) => u64::try_from(i64::from(*c)).unwrap_or(1),
        _ => 1,
    };
    let spent = COST.with(|c| {
        let total = c.get().saturating_add(cost);
        c.set(total);
        total
    });
    if spent > MAX_COST {
        OVER.with(|o| o.set(true));
        return Err(fail(ftx, "operation cancelled: actual cost limit exceeded"));
    }
    ftx.ptx.resolve(step)
}

/// A comprehension's range, if it is a list or a map; else cel-go's error naming the Go
/// type of the value.
fn dra_iterable(ftx: &FunctionContext) -> ResolveResult {
    let values = operands(ftx)?;
    let [range] = values.as_slice() else {
        return Err(ExecutionError::NoSuchOverload);
    };
    let go_type = match range {
        Value::List(_) | Value::Map(_) => return Ok(range.clone()),
        Value::Int(_) => "types.Int",
        Value::UInt(_) => "types.Uint",
        Value::Float(_) => "types.Double",
        Value::String(_) => "types.String",
        Value::Bool(_) => "types.Bool",
        Value::Bytes(_) => "types.Bytes",
        Value::Null => "types.Null",
        Value::Opaque(o) if o.downcast_ref::<Semver>().is_some() => "cel.Semver",
        Value::Opaque(o) if o.downcast_ref::<CelQuantity>().is_some() => "cel.Quantity",
        _ => "types.Unknown",
    };
    Err(fail(
        ftx,
        format!("got '{go_type}', expected iterable type"),
    ))
}

fn cel_bind(ftx: &FunctionContext) -> ResolveResult {
    let [name, init, body] = ftx.args else {
        return Err(fail(
            ftx,
            "cel.bind takes a name, a value and an expression",
        ));
    };
    let Expr::Ident(name) = &name.expr else {
        return Err(fail(ftx, "cel.bind's first argument must be a name"));
    };
    let value = ftx.ptx.resolve(init)?;
    let mut scope = ftx.ptx.new_inner_scope();
    scope.add_variable_from_value(name.clone(), value);
    scope.resolve(body)
}

fn includes(ftx: &FunctionContext) -> ResolveResult {
    let values = operands(ftx)?;
    let [target, wanted] = values.as_slice() else {
        return Err(ExecutionError::NoSuchOverload);
    };
    Ok(Value::Bool(match target {
        Value::List(items) => items.iter().any(|item| item == wanted),
        other => other == wanted,
    }))
}

/// A quantity as a CEL value (`kubernetes.Quantity`).
#[derive(Debug, Clone, PartialEq, Eq)]
struct CelQuantity(Amount);

impl Opaque for CelQuantity {
    fn runtime_type_name(&self) -> &str {
        "kubernetes.Quantity"
    }
}

fn quantity_value(amount: Amount) -> Value {
    Value::Opaque(Arc::new(CelQuantity(amount)))
}

fn as_quantity(value: &Value) -> Option<Amount> {
    match value {
        Value::Opaque(o) => o.downcast_ref::<CelQuantity>().map(|q| q.0),
        _ => None,
    }
}

fn as_semver(value: &Value) -> Option<&Semver> {
    match value {
        Value::Opaque(o) => o.downcast_ref::<Semver>(),
        _ => None,
    }
}

fn parse_quantity(text: &str) -> Result<Amount, String> {
    Amount::parse("quantity", &Quantity(text.to_string())).map_err(|_| {
        "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
            .to_string()
    })
}

fn quantity(ftx: &FunctionContext) -> ResolveResult {
    match operands(ftx)?.as_slice() {
        [Value::String(s)] => parse_quantity(s)
            .map(quantity_value)
            .map_err(|e| fail(ftx, e)),
        _ => Err(ExecutionError::NoSuchOverload),
    }
}

fn is_quantity(ftx: &FunctionContext) -> ResolveResult {
    match operands(ftx)?.as_slice() {
        [Value::String(s)] => Ok(Value::Bool(parse_quantity(s).is_ok())),
        _ => Err(ExecutionError::NoSuchOverload),
    }
}

fn one_quantity(ftx: &FunctionContext) -> Result<Amount, ExecutionError> {
    match operands(ftx)?.as_slice() {
        [q] => as_quantity(q).ok_or(ExecutionError::NoSuchOverload),
        _ => Err(ExecutionError::NoSuchOverload),
    }
}

fn sign(ftx: &FunctionContext) -> ResolveResult {
    Ok(Value::Int(one_quantity(ftx)?.nanos.signum() as i64))
}

fn integer_of(amount: Amount) -> Option<i64> {
    if amount.nanos % 1_000_000_000 != 0 {
        return None;
    }
    i64::try_from(amount.nanos / 1_000_000_000).ok()
}

fn as_integer(ftx: &FunctionContext) -> ResolveResult {
    integer_of(one_quantity(ftx)?)
        .map(Value::Int)
        .ok_or_else(|| fail(ftx, "cannot convert value to integer"))
}

fn is_integer(ftx: &FunctionContext) -> ResolveResult {
    Ok(Value::Bool(integer_of(one_quantity(ftx)?).is_some()))
}

fn as_approximate_float(ftx: &FunctionContext) -> ResolveResult {
    Ok(Value::Float(one_quantity(ftx)?.nanos as f64 / 1e9))
}

fn quantity_pair(ftx: &FunctionContext) -> Result<(Amount, Amount), ExecutionError> {
    match operands(ftx)?.as_slice() {
        [a, Value::Int(i)] => {
            let a = as_quantity(a).ok_or(ExecutionError::NoSuchOverload)?;
            Ok((a, Amount::from_units(*i, a.format)))
        }
        [a, b] => match (as_quantity(a), as_quantity(b)) {
            (Some(a), Some(b)) => Ok((a, b)),
            _ => Err(ExecutionError::NoSuchOverload),
        },
        _ => Err(ExecutionError::NoSuchOverload),
    }
}

fn add(ftx: &FunctionContext) -> ResolveResult {
    let (a, b) = quantity_pair(ftx)?;
    Ok(quantity_value(a.plus(b)))
}

fn sub(ftx: &FunctionContext) -> ResolveResult {
    let (a, b) = quantity_pair(ftx)?;
    Ok(quantity_value(a.minus(b)))
}

/// Compares two quantities or two versions.
fn ordering(ftx: &FunctionContext) -> Result<Ordering, ExecutionError> {
    let values = operands(ftx)?;
    let [a, b] = values.as_slice() else {
        return Err(ExecutionError::NoSuchOverload);
    };
    if let (Some(a), Some(b)) = (as_quantity(a), as_quantity(b)) {
        return Ok(a.cmp(&b));
    }
    if let (Some(a), Some(b)) = (as_semver(a), as_semver(b)) {
        return Ok(a.compare(b));
    }
    Err(ExecutionError::NoSuchOverload)
}

fn is_greater_than(ftx: &FunctionContext) -> ResolveResult {
    Ok(Value::Bool(ordering(ftx)? == Ordering::Greater))
}

fn is_less_than(ftx: &FunctionContext) -> ResolveResult {
    Ok(Value::Bool(ordering(ftx)? == Ordering::Less))
}

fn compare_to(ftx: &FunctionContext) -> ResolveResult {
    Ok(Value::Int(match ordering(ftx)? {
        Ordering::Less => -1,
        Ordering::Equal => 0,
        Ordering::Greater => 1,
    }))
}

/// A semantic version (`kubernetes.Semver`): equal and ordered without build metadata.
#[derive(Debug, Clone)]
struct Semver {
    major: u64,
    minor: u64,
    patch: u64,
    pre: Vec<String>,
}

impl PartialEq for Semver {
    fn eq(&self, other: &Self) -> bool {
        self.compare(other) == Ordering::Equal
    }
}

impl Eq for Semver {}

impl Opaque for Semver {
    fn runtime_type_name(&self) -> &str {
        "kubernetes.Semver"
    }
}

fn numeric_part(text: &str, what: &str) -> Result<u64, String> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!(
            "Invalid character(s) found in {what} number {text:?}"
        ));
    }
    if text.len() > 1 && text.starts_with('0') {
        let upper = format!("{}{}", what[..1].to_uppercase(), &what[1..]);
        return Err(format!(
            "{upper} number must not contain leading zeroes {text:?}"
        ));
    }
    text.parse()
        .map_err(|_| format!("Invalid character(s) found in {what} number {text:?}"))
}

impl Semver {
    /// Strict semantic version 2.0.0 (blang/semver's `Parse`).
    fn parse(text: &str) -> Result<Semver, String> {
        if text.is_empty() {
            return Err("Version string empty".into());
        }
        let without_build = match text.split_once('+') {
            Some((version, build)) => {
                if build.is_empty()
                    || build.split('.').any(|p| {
                        p.is_empty() || !p.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
                    })
                {
                    return Err(format!(
                        "Invalid character(s) found in build meta data {build:?}"
                    ));
                }
                version
            }
            None => text,
        };
        let (core, pre) = match without_build.split_once('-') {
            Some((core, pre)) => (core, Some(pre)),
            None => (without_build, None),
        };
        let parts: Vec<&str> = core.split('.').collect();
        if parts.len() != 3 {
            return Err("No Major.Minor.Patch elements found".into());
        }
        let major = numeric_part(parts[0], "major")?;
        let minor = numeric_part(parts[1], "minor")?;
        let patch = numeric_part(parts[2], "patch")?;
        let mut identifiers = Vec::new();
        if let Some(pre) = pre {
            for id in pre.split('.') {
                if id.is_empty() {
                    return Err("Prerelease is empty".into());
                }
                if !id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') {
                    return Err(format!("Invalid character(s) found in prerelease {id:?}"));
                }
                if id.bytes().all(|b| b.is_ascii_digit()) && id.len() > 1 && id.starts_with('0') {
                    return Err(format!(
                        "Version contains prerelease with leading zeroes {id:?}"
                    ));
                }
                identifiers.push(id.to_string());
            }
        }
        Ok(Semver {
            major,
            minor,
            patch,
            pre: identifiers,
        })
    }

    /// Upstream's normalising parse: an optional leading `v`, leading zeros dropped,
    /// missing minor and patch filled with 0.
    fn parse_normalized(text: &str) -> Result<Semver, String> {
        let text = text.strip_prefix('v').unwrap_or(text);
        let (core, rest) = match text.find(['-', '+']) {
            Some(i) => (&text[..i], &text[i..]),
            None => (text, ""),
        };
        let mut parts: Vec<String> = core
            .split('.')
            .map(|p| {
                let trimmed = p.trim_start_matches('0');
                if trimmed.is_empty() && !p.is_empty() {
                    "0".to_string()
                } else {
                    trimmed.to_string()
                }
            })
            .collect();
        if parts.len() < 3 {
            if !rest.is_empty() {
                return Err("short version cannot contain PreRelease/Build meta data".into());
            }
            parts.resize(3, "0".to_string());
        }
        Semver::parse(&format!("{}{rest}", parts.join(".")))
    }

    fn compare(&self, other: &Semver) -> Ordering {
        let core =
            (self.major, self.minor, self.patch).cmp(&(other.major, other.minor, other.patch));
        if core != Ordering::Equal {
            return core;
        }
        match (self.pre.is_empty(), other.pre.is_empty()) {
            (true, true) => return Ordering::Equal,
            (true, false) => return Ordering::Greater,
            (false, true) => return Ordering::Less,
            _ => {}
        }
        for (a, b) in self.pre.iter().zip(&other.pre) {
            let order = match (a.parse::<u64>(), b.parse::<u64>()) {
                (Ok(x), Ok(y)) => x.cmp(&y),
                (Ok(_), Err(_)) => Ordering::Less,
                (Err(_), Ok(_)) => Ordering::Greater,
                _ => a.cmp(b),
            };
            if order != Ordering::Equal {
                return order;
            }
        }
        self.pre.len().cmp(&other.pre.len())
    }
}

fn semver_of(ftx: &FunctionContext) -> Result<Result<Semver, String>, ExecutionError> {
    match operands(ftx)?.as_slice() {
        [Value::String(s)] => Ok(Semver::parse(s)),
        [Value::String(s), Value::Bool(normalize)] => Ok(if *normalize {
            Semver::parse_normalized(s)
        } else {
            Semver::parse(s)
        }),
        _ => Err(ExecutionError::NoSuchOverload),
    }
}

fn semver(ftx: &FunctionContext) -> ResolveResult {
    semver_of(ftx)?
        .map(|v| Value::Opaque(Arc::new(v)))
        .map_err(|e| fail(ftx, e))
}

fn is_semver(ftx: &FunctionContext) -> ResolveResult {
    Ok(Value::Bool(semver_of(ftx)?.is_ok()))
}

fn one_semver(ftx: &FunctionContext) -> Result<Semver, ExecutionError> {
    match operands(ftx)?.as_slice() {
        [v] => as_semver(v).cloned().ok_or(ExecutionError::NoSuchOverload),
        _ => Err(ExecutionError::NoSuchOverload),
    }
}

fn major(ftx: &FunctionContext) -> ResolveResult {
    Ok(Value::Int(one_semver(ftx)?.major as i64))
}

fn minor(ftx: &FunctionContext) -> ResolveResult {
    Ok(Value::Int(one_semver(ftx)?.minor as i64))
}

fn patch(ftx: &FunctionContext) -> ResolveResult {
    Ok(Value::Int(one_semver(ftx)?.patch as i64))
}

#[cfg(test)]
mod tests;
