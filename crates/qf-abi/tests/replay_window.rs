//! Replay window semantics: STALE for older epochs, DUPLICATE within the current epoch, a newer
//! epoch clears the window, capacity bounds the memory.

use qf_abi::{ReplayWindow, Status};

#[test]
fn a_repeated_invocation_in_the_current_epoch_is_duplicate() {
    let mut window = ReplayWindow::<64>::new();
    window.accept(1, 100).expect("first time");
    let error = window.accept(1, 100).unwrap_err();
    assert_eq!(error.status, Status::Duplicate);
    assert_eq!(window.len(), 1, "a rejection records nothing");
}

#[test]
fn an_older_epoch_is_stale_and_changes_nothing() {
    let mut window = ReplayWindow::<64>::new();
    window.accept(5, 1).unwrap();
    let error = window.accept(4, 2).unwrap_err();
    assert_eq!(error.status, Status::Stale);
    assert_eq!((window.epoch(), window.len()), (5, 1));
}

#[test]
fn a_newer_epoch_clears_the_window_and_becomes_current() {
    let mut window = ReplayWindow::<64>::new();
    window.accept(1, 7).unwrap();
    window.accept(1, 8).unwrap();
    window.accept(2, 7).expect("id 7 is new in epoch 2");
    assert_eq!((window.epoch(), window.len()), (2, 1));
    assert_eq!(window.accept(2, 7).unwrap_err().status, Status::Duplicate);
    assert_eq!(window.accept(1, 9).unwrap_err().status, Status::Stale);
}

#[test]
fn the_window_remembers_exactly_its_capacity_of_latest_ids() {
    let mut window = ReplayWindow::<4>::new();
    for id in 0..6u64 {
        window.accept(0, id).unwrap();
    }
    assert_eq!(window.len(), 4);
    for id in 2..6u64 {
        assert_eq!(
            window.check(0, id).unwrap_err().status,
            Status::Duplicate,
            "id {id}"
        );
    }
    // Ids 0 and 1 were evicted by 4 and 5: a bounded window cannot remember them.
    assert!(window.check(0, 0).is_ok());
    assert!(window.check(0, 1).is_ok());
}

#[test]
fn the_default_capacity_is_64_as_in_the_prototype() {
    let window: ReplayWindow = ReplayWindow::new();
    assert_eq!(ReplayWindow::<64>::CAPACITY, 64);
    assert_eq!(window, ReplayWindow::<64>::default());
}

#[test]
fn ids_need_not_be_sequential() {
    let mut window = ReplayWindow::<64>::new();
    for id in [u64::MAX, 0, 0x0102_0304_0506_0708, 3] {
        window.accept(u32::MAX, id).unwrap();
    }
    assert_eq!(
        window.accept(u32::MAX, 0).unwrap_err().status,
        Status::Duplicate
    );
}
