use super::*;

#[test]
fn init_says_whether_it_made_the_store() {
    let made = Initialised {
        store: "redis://cache:6379/0".to_owned(),
        created: true,
    };
    assert_eq!(
        init_text(&made),
        "sc-state: created the state store redis://cache:6379/0\n"
    );
    let kept = Initialised {
        created: false,
        ..made
    };
    assert_eq!(
        init_text(&kept),
        "sc-state: redis://cache:6379/0 is a state store already; nothing changed\n"
    );
}

/// `sc-state reset` forgets the held amounts it clears: an agent's own with `--agent`, all of
/// them with the whole state.
#[test]
fn a_reset_forgets_the_held_amounts_it_clears() {
    use crate::call::Call;
    use crate::rules::policy::Policy;
    use crate::store::MemoryStore;
    use crate::verdict::{Decision, Judgement};
    let pay = |agent: &str| {
        Call::parse_line(
            format!(
                r#"{{"agent":"{agent}","tool":"send_payment","args":{{"to":"x","amount":750}}}}"#
            )
            .as_bytes(),
        )
        .unwrap()
        .0
    };
    let hold = Judgement {
        granting: Default::default(),
        decision: Decision::Hold,
        reasons: vec!["held".into()],
    };
    let key = StateKey::crew("payments", View::Gate);
    let mut store = MemoryStore::new();
    store
        .update(&key, &mut |state| {
            for (id, agent) in [("1", "a"), ("2", "b")] {
                state.record(&pay(agent), id, &hold, &Policy::default());
                state.note_held(id, &pay(agent));
            }
        })
        .unwrap();
    let owner = Owner::Crew("payments".into());
    let held = |store: &mut MemoryStore| {
        let state = store.read(&key).unwrap().unwrap();
        state
            .held_spend
            .iter()
            .map(|held| held.id.clone())
            .collect::<Vec<_>>()
    };
    reset(
        &mut store,
        &Reset {
            owner: owner.clone(),
            agent: Some("a".into()),
        },
    )
    .unwrap();
    assert_eq!(held(&mut store), ["2"]);
    reset(&mut store, &Reset { owner, agent: None }).unwrap();
    assert!(held(&mut store).is_empty());
}
