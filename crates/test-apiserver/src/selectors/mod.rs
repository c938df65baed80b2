//! Label and field selectors of list and watch requests.
//!
//! - [`LabelSelector`]: upstream's full grammar (`a=b`, `a==b`, `a!=b`, `a in (x,y)`,
//!   `a notin (x)`, `a`, `!a`, `a>1`, `a<1`, comma-joined, whitespace tolerant) with its
//!   key/value validation and error messages; see [`label`].
//! - [`FieldSelector`]: `f=v`, `f==v`, `f!=v`, comma-joined, with the fields each resource
//!   supports on the real server; see [`field`].

pub mod field;
pub mod label;

pub use field::{FieldOperator, FieldRequirement, FieldSelector};
pub use label::{LabelSelector, Operator, Requirement};
