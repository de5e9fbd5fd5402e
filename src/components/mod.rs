//! The components: plain data, one entity kind per file. Behaviour lives in
//! [`systems`](crate::systems).

pub mod allocation;
pub mod binding;
pub mod claim;
pub mod failure;
pub mod record;
pub mod stream;
