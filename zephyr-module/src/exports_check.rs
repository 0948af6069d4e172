//! Compile-time proof that every `#[no_mangle] extern "C"` function this library exports has
//! exactly the signature its C header declares (include/qfabric/*.h, through bindgen's `sys`).
//! Nothing here runs: each pair must coerce to one function-pointer type, so a changed
//! parameter or return type on either side fails the build instead of corrupting a call.

use crate::sys;

/// For each `module::name`: the header's `sys::name` and the export `crate::module::name`.
macro_rules! same_signature {
    ($($module:ident :: $name:ident),* $(,)?) => {
        $(
            const _: () = {
                // One array: both function items must coerce to the same `fn` pointer type.
                let _ = [sys::$name, crate::$module::$name];
            };
        )*
    };
}

same_signature!(
    api::qf_thread_deadline_set,
    api::qf_thread_period_set,
    api::qf_thread_cbs_budget_set,
    api::qf_thread_wcet_set,
    api::qf_thread_deadline_miss_callback_set,
    api::qf_thread_slot,
    api::z_qf_switched_in,
    api::z_qf_switched_out,
    state::qf_rs_init,
    api::qf_rs_timer_expired,
    api::qf_rs_timer_reaimed,
    api::qf_rs_miss_report,
    api::qf_rs_thread_exit,
    trace::qf_trace_pop,
    trace::qf_trace_lost,
    trace::qf_trace_dump,
    trace::qf_switch_pop,
);

#[cfg(feature = "executor")]
same_signature!(
    executor::qf_executor_serve,
    executor::qf_executor_replay_reset,
    executor::qf_request_encode,
    chains::qf_rs_chain_start,
    chains::qf_chain_stop,
    chains::qf_chain_stats_get,
    chains::qf_chain_thread,
    chains::qf_rs_chain_main,
);
