//! `add`: signed 32-bit addition, the paper's trivial workload.
//!
//! Overflow wraps (two's complement), exactly what the Cortex-M33 and the Cortex-A53 `add`
//! instructions do, so both domains return the same bits for every input and the task can never
//! fail: `i32::MAX + 1 == i32::MIN`.

use crate::declared::{AddRequest, AddResponse};

/// `a + b`, wrapping on overflow.
pub fn add(request: &AddRequest) -> AddResponse {
    AddResponse {
        value: request.a.wrapping_add(request.b),
    }
}
