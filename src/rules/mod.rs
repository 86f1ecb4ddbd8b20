//! The rules, one concern a file: what a policy says ([`policy`], [`argrules`]), the decision
//! ([`decision`]) over a call and the crew's state ([`state`]). The types they share sit below
//! them: [`verdict`] (a decision and its reasons) and [`names`] (tool patterns, did-you-mean).

pub mod argrules;
pub mod decision;
pub mod names;
pub mod policy;
pub mod state;
pub mod verdict;
