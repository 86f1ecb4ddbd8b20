//! Single-use tokens a crew's doors have spent ([`consume`]): sc-mcp's sealed `requestState`s,
//! so that a retry is served once, by whichever sc-mcp of the crew it reaches, and a replay is
//! refused. One value per crew ([`ValueKey::Spent`]): `{"TOKEN": EXPIRY_MS, …}`, changed under the
//! store's atomic update; a token is forgotten [`SKEW_MARGIN`] after its expiry (its state is
//! refused as expired by then, on any door whose clock is within the margin of the one that
//! forgets it).

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

use super::backend::Store;
use super::key::ValueKey;
use super::list::{update_list, ListFailure};
use super::{StoreError, ValueChange};

/// The most tokens a crew keeps spent at once; past that, a new one is refused rather than an
/// old one forgotten early (forgetting would let it be replayed).
pub const MAX_SPENT: usize = 100_000;

/// How long a spent token is kept past its expiry: one hour. The doors of a crew each check a
/// state's expiry by their own clock, and the one that forgets a token does so by its own: were
/// it forgotten at its expiry by a door whose clock is ahead, a door whose clock is behind by d
/// would find the state unexpired and take it again, for the last d of its life (and anyone may
/// make a door forget, by spending a token of their own there). Kept an hour longer, a token is
/// refused as spent until every door whose clock is within an hour of the forgetting one's sees
/// its state expired. The list stays bounded by [`MAX_SPENT`]: the margin only keeps each token
/// there an hour longer, so it is full once a crew spends [`MAX_SPENT`] tokens within a TTL and
/// an hour, rather than within a TTL.
pub const SKEW_MARGIN: Duration = Duration::from_secs(3600);

/// Why a token could not be spent.
#[derive(Debug, thiserror::Error)]
pub enum SpentError {
    #[error("the token was already used")]
    AlreadySpent,
    #[error("{MAX_SPENT} single-use tokens of the crew are still kept (live, or expired within the hour); refused")]
    Full,
    #[error("{store}: the spent tokens of crew {crew:?} are not what this program writes: {why}")]
    Refused {
        store: String,
        crew: String,
        why: String,
    },
    #[error(transparent)]
    Store(#[from] StoreError),
}

fn millis(time: SystemTime) -> u64 {
    time.duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |since| {
            u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
        })
}

fn read(text: &str) -> Result<Vec<(String, u64)>, serde_json::Error> {
    let map: BTreeMap<String, u64> = serde_json::from_str(text)?;
    Ok(map.into_iter().collect())
}

fn write(tokens: &[(String, u64)]) -> Result<ValueChange, SpentError> {
    let map: BTreeMap<&str, u64> = tokens.iter().map(|(t, e)| (t.as_str(), *e)).collect();
    Ok(ValueChange::Set(
        serde_json::to_string(&map).expect("a map serializes"),
    ))
}

/// Spends `token` (valid until `expires`) for the crew, once: `Ok(())` the first time, and
/// [`SpentError::AlreadySpent`] every time after, from any process sharing the store. Tokens more
/// than [`SKEW_MARGIN`] past their expiry at `now` are forgotten on the way.
pub fn consume(
    store: &mut dyn Store,
    crew: &str,
    token: &str,
    expires: SystemTime,
    now: SystemTime,
) -> Result<(), SpentError> {
    let (expires, now) = (millis(expires), millis(now));
    let margin = u64::try_from(SKEW_MARGIN.as_millis()).expect("an hour in milliseconds");
    let result = update_list(
        store,
        &ValueKey::spent(crew),
        &read,
        &write,
        &mut |tokens: &mut Vec<(String, u64)>| {
            tokens.retain(|(_, until)| until.saturating_add(margin) >= now);
            if tokens.iter().any(|(spent, _)| spent == token) {
                return Err(SpentError::AlreadySpent);
            }
            if tokens.len() >= MAX_SPENT {
                return Err(SpentError::Full);
            }
            tokens.push((token.to_owned(), expires));
            Ok(((), true))
        },
    );
    result.map_err(|failure| match failure {
        ListFailure::Refused { store, why } => SpentError::Refused {
            store,
            crew: crew.to_owned(),
            why,
        },
        ListFailure::Store(err) => SpentError::Store(err),
        ListFailure::Change(err) => err,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::state::{Clock, SetClock};
    use crate::store::sqlite::SqliteStore;
    use crate::store::OpenOptions;
    use std::time::Duration;

    #[test]
    fn a_token_is_spent_once_across_handles_and_forgotten_after_expiry() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.sqlite");
        let options = OpenOptions {
            create: true,
            fsync: false,
        };
        let mut one = SqliteStore::open(&path, options).unwrap();
        let mut two = SqliteStore::open(&path, options).unwrap();
        let now = SystemTime::now();
        let until = now + Duration::from_secs(60);
        consume(&mut one, "crew", "t1", until, now).unwrap();
        assert!(matches!(
            consume(&mut two, "crew", "t1", until, now),
            Err(SpentError::AlreadySpent)
        ));
        // Another crew's tokens are its own.
        consume(&mut two, "other", "t1", until, now).unwrap();
        // Past its expiry and the margin, a token is forgotten.
        let later = until + SKEW_MARGIN + Duration::from_secs(1);
        consume(
            &mut two,
            "crew",
            "t2",
            later + Duration::from_secs(60),
            later,
        )
        .unwrap();
        let stored = two
            .update_value(&ValueKey::spent("crew"), &mut |text| {
                assert!(!text.unwrap().contains("t1"), "{text:?}");
                Ok(ValueChange::Keep)
            })
            .is_ok();
        assert!(stored);
    }

    /// Two doors of a crew on one store, the presenting door's clock behind the consuming
    /// door's by `skew`, less than the margin: the consumer spends a token, its TTL passes on the
    /// consumer's clock, and a token of the attacker's own makes it prune the list. On the slow
    /// clock the state has not expired (its door would open it), and the token is still spent.
    /// Once the margin has passed too, it is forgotten: the list stays bounded.
    #[test]
    fn a_spent_token_is_kept_past_its_expiry_so_a_door_with_a_slower_clock_refuses_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.sqlite");
        let options = OpenOptions {
            create: true,
            fsync: false,
        };
        let ttl = Duration::from_secs(600);
        let start = 1_796_212_800;
        for skew in [
            Duration::from_secs(300),
            SKEW_MARGIN - Duration::from_secs(2),
        ] {
            let crew = format!("crew-{}", skew.as_secs());
            let mut fast = SqliteStore::open(&path, options).unwrap();
            let mut slow = SqliteStore::open(&path, options).unwrap();
            let consumer = SetClock::at(start);
            let presenter = SetClock::at(start - skew.as_secs());
            let expires = consumer.now() + ttl;
            consume(&mut fast, &crew, "yes", expires, consumer.now()).unwrap();
            // The TTL passes on the consumer's clock; a retry of the attacker's prunes there.
            consumer.advance(ttl + Duration::from_secs(1));
            presenter.advance(ttl + Duration::from_secs(1));
            assert!(consumer.now() > expires && presenter.now() < expires);
            let (own, at) = (consumer.now() + ttl, consumer.now());
            consume(&mut fast, &crew, "attacker's own", own, at).unwrap();
            // The slow door, to which the state is still unexpired, finds it spent.
            assert!(
                matches!(
                    consume(&mut slow, &crew, "yes", expires, presenter.now()),
                    Err(SpentError::AlreadySpent)
                ),
                "replayed with a clock {} s behind",
                skew.as_secs()
            );
            // Past the margin on the consumer's clock (and past its expiry on the slow one's),
            // it is forgotten on the next spend.
            consumer.set(start + (ttl + SKEW_MARGIN).as_secs() + 1);
            presenter.set(start - skew.as_secs() + (ttl + SKEW_MARGIN).as_secs() + 1);
            assert!(presenter.now() > expires);
            let (next, at) = (consumer.now() + ttl, consumer.now());
            consume(&mut fast, &crew, "next", next, at).unwrap();
            fast.update_value(&ValueKey::spent(&crew), &mut |text| {
                let text = text.unwrap();
                assert!(!text.contains("\"yes\""), "{text}");
                assert!(
                    text.contains("attacker's own") && text.contains("next"),
                    "{text}"
                );
                Ok(ValueChange::Keep)
            })
            .unwrap();
        }
    }

    #[test]
    fn a_value_it_did_not_write_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let options = OpenOptions {
            create: true,
            fsync: false,
        };
        let mut store = SqliteStore::open(&dir.path().join("s.sqlite"), options).unwrap();
        store
            .update_value(&ValueKey::spent("crew"), &mut |_| {
                Ok(ValueChange::Set("[1]".into()))
            })
            .unwrap();
        let now = SystemTime::now();
        assert!(matches!(
            consume(&mut store, "crew", "t", now, now),
            Err(SpentError::Refused { .. })
        ));
    }
}
