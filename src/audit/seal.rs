//! The MACs that bind a stage's word to a record under the audit key: sc-gate's seal on a verdict
//! and sc-approve's MAC on an approval. sc-exec, given the key, recomputes both and acts only on
//! records whose MACs match, so a decision or approval changed between the stages is refused.

use super::chain::{Chain, Link};
use crate::record::Approval;
use crate::verdict::Decision;

/// The seal sc-gate puts on a verdict when it holds the audit key: the HMAC, under the key, of a
/// label, the verdict's id, the SHA-256 of its `call` exactly as written, its decision, a hold's
/// reasons and its `grantable` exactly as written, each part length-prefixed. sc-exec,
/// given the key, acts only on a record whose seal is the one for its id, call, decision, reasons
/// and grantable, and sc-approve asks a person only about such a record: a decision changed (a
/// hold made an allow), a call changed, a reason rewritten (the card would show a person words
/// the gate never wrote) or what a yes may be remembered for widened between the stages is
/// refused. `None` without a key.
pub(crate) fn verdict_seal(
    chain: &Chain,
    id: &str,
    call_text: &str,
    decision: Decision,
    reasons: &[String],
    grantable: Option<&str>,
) -> Option<Link> {
    use sha2::{Digest, Sha256};
    // Unkeyed there is no seal: the call is not even hashed (it would cost every verdict a
    // SHA-256 of its call for nothing).
    if !chain.is_keyed() {
        return None;
    }
    // A hold's reasons are what a person reads before answering; an allow's and a deny's are
    // read by no one before they take effect, and are left out (a seal on every verdict is
    // hashed on the gate's hot path).
    let reasons = if decision == Decision::Hold {
        reasons
    } else {
        &[]
    };
    let call_digest: [u8; 32] = Sha256::digest(call_text.as_bytes()).into();
    let id_len = (id.len() as u64).to_be_bytes();
    let decision = decision.as_str().as_bytes();
    let decision_len = (decision.len() as u64).to_be_bytes();
    // The reasons as the stages read them (each string, decoded), counted and length-prefixed.
    // No reasons (every allow and deny) is a count of zero, written without a buffer.
    let reasons_part: std::borrow::Cow<[u8]> = if reasons.is_empty() {
        std::borrow::Cow::Borrowed(&[0u8; 8])
    } else {
        let mut part = Vec::with_capacity(8 + reasons.iter().map(|r| 8 + r.len()).sum::<usize>());
        part.extend_from_slice(&(reasons.len() as u64).to_be_bytes());
        for reason in reasons {
            part.extend_from_slice(&(reason.len() as u64).to_be_bytes());
            part.extend_from_slice(reason.as_bytes());
        }
        std::borrow::Cow::Owned(part)
    };
    let (has_grantable, grantable) = match grantable {
        Some(grantable) => (&[1u8][..], grantable.as_bytes()),
        None => (&[0u8][..], &b""[..]),
    };
    chain.mac(&[
        b"skeleton-crew verdict v3\0",
        &id_len,
        id.as_bytes(),
        &call_digest,
        &decision_len,
        decision,
        &reasons_part,
        has_grantable,
        grantable,
    ])
}

/// What an approval's MAC is the HMAC of, under the audit key: a label, the record's id, the
/// SHA-256 of its `call` exactly as it came, and the approval itself (as sc-approve writes it,
/// without its MAC). Each part is length-prefixed, so no two parts can be read another way.
/// `None` without a key.
pub(crate) fn approval_mac(
    chain: &Chain,
    id: &str,
    call_text: &str,
    approval: &Approval,
) -> Option<Link> {
    use sha2::{Digest, Sha256};
    if !chain.is_keyed() {
        return None;
    }
    let call_digest: [u8; 32] = Sha256::digest(call_text.as_bytes()).into();
    let approval_json = serde_json::to_vec(approval).expect("an approval serializes");
    let id_len = (id.len() as u64).to_be_bytes();
    let approval_len = (approval_json.len() as u64).to_be_bytes();
    chain.mac(&[
        b"skeleton-crew approval v1\0",
        &id_len,
        id.as_bytes(),
        &call_digest,
        &approval_len,
        &approval_json,
    ])
}

#[cfg(test)]
#[path = "seal_tests.rs"]
mod tests;
