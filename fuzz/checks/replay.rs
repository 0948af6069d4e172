// The property the `replay_window` fuzz target checks, shared with the regression test through
// `include!`: `qf_abi::ReplayWindow` behaves exactly like a plain reference model (a list of
// the last N accepted ids of the current epoch) for any sequence of operations.

/// Interprets `data` as operations, 3 bytes each: epoch (mod 6), invocation id (mod 24), and
/// whether to `accept` (odd) or only `check` (even); compares window and model after each.
pub fn check_replay(data: &[u8]) {
    use qf_abi::{ReplayWindow, Status};
    const CAPACITY: usize = 8;
    let mut window = ReplayWindow::<CAPACITY>::new();
    let mut model_epoch = 0u32;
    let mut model_ids: Vec<u64> = Vec::new();
    for op in data.chunks_exact(3) {
        let epoch = u32::from(op[0] % 6);
        let id = u64::from(op[1] % 24);
        let record = op[2] & 1 == 1;
        let expected = if epoch < model_epoch {
            Err(Status::Stale)
        } else if epoch == model_epoch && model_ids.contains(&id) {
            Err(Status::Duplicate)
        } else {
            Ok(())
        };
        let actual = if record { window.accept(epoch, id) } else { window.check(epoch, id) };
        assert_eq!(actual.map_err(|e| e.status), expected, "epoch {epoch} id {id} record {record}");
        if record && expected.is_ok() {
            if epoch > model_epoch {
                model_epoch = epoch;
                model_ids.clear();
            }
            model_ids.push(id);
            if model_ids.len() > CAPACITY {
                model_ids.remove(0);
            }
        }
        assert_eq!(window.epoch(), model_epoch);
        assert_eq!(window.len(), model_ids.len());
    }
}
