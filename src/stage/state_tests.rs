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
