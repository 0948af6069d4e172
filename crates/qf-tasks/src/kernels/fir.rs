//! `fir_x1`, `fir_x64`, `fir_x512`: a 16-tap triangular Q15 FIR filter over 32 samples, run for
//! 1, 64 or 512 passes with a pass-dependent perturbation.
//!
//! * Taps: the triangle 1,2,…,8,8,…,2,1 normalised to unity DC gain in Q15
//!   (`round(w * 32768 / 72)`, which sums to exactly 32768).
//! * Pass `p` perturbs the request's samples, `x[n] + ((37 p + 11 n) mod 61) - 30` with
//!   saturation, and filters them from zero history:
//!   `y_p[n] = sat16((Σ_{k≤n} h[k]·x[n-k] + 2^14) >> 15)`, products and sums in a saturating
//!   32-bit accumulator (as a Cortex-M `QADD` would) and round-half-up narrowing.
//! * The response is the per-sample mean of all passes, `floor(Σ_p y_p[n] / passes)`.
//!
//! Why this shape: every pass contributes to the result (nothing an optimiser may drop), the
//! result depends on the request, and the perturbation's period (61) divides neither 64 nor 512,
//! so FIR×1, FIR×64 and FIR×512 give different answers. (Chaining passes output-to-input would
//! not do: a low-pass iterated from zero history forgets its input within a few passes.)

use crate::declared::{FirRequest, FirResponse};

/// Samples per block.
pub const SAMPLES: usize = 32;
/// Filter length.
pub const TAPS: usize = 16;

/// The triangular Q15 taps, computed at compile time from their definition.
pub const COEFFICIENTS: [i16; TAPS] = triangular_taps();

const fn triangular_taps() -> [i16; TAPS] {
    let mut taps = [0i16; TAPS];
    let mut k = 0;
    while k < TAPS {
        let weight = if k < TAPS / 2 { k + 1 } else { TAPS - k };
        // round(weight * 32768 / 72) with integers; the weights sum to 72.
        taps[k] = ((weight * 32768 + 36) / 72) as i16;
        k += 1;
    }
    taps
}

/// The perturbation added to sample `n` in pass `pass`: in -30..=30.
pub const fn perturbation(pass: u32, n: usize) -> i16 {
    ((pass as u64 * 37 + n as u64 * 11) % 61) as i16 - 30
}

/// One pass: perturb, then filter from zero history.
fn filter_pass(input: &[i16; SAMPLES], pass: u32) -> [i16; SAMPLES] {
    let mut perturbed = [0i16; SAMPLES];
    for (n, (out, &sample)) in perturbed.iter_mut().zip(input).enumerate() {
        *out = sample.saturating_add(perturbation(pass, n));
    }
    let mut output = [0i16; SAMPLES];
    for (n, out) in output.iter_mut().enumerate() {
        let mut accumulator: i32 = 1 << 14; // rounding: add half an LSB before the shift
        for (k, &tap) in COEFFICIENTS.iter().enumerate().take(n + 1) {
            let product = i32::from(tap) * i32::from(perturbed[n - k]);
            accumulator = accumulator.saturating_add(product);
        }
        *out = saturate_q15(accumulator >> 15);
    }
    output
}

fn saturate_q15(value: i32) -> i16 {
    value.clamp(i32::from(i16::MIN), i32::from(i16::MAX)) as i16
}

/// Runs `passes` passes over the request's samples and returns their per-sample mean
/// (the request's samples unchanged for 0 passes).
pub fn fir(request: &FirRequest, passes: u32) -> FirResponse {
    if passes == 0 {
        return FirResponse {
            samples: request.samples,
        };
    }
    // |Σ y| ≤ 512 · 32768 for the declared pass counts; i64 keeps any u32 count exact.
    let mut sums = [0i64; SAMPLES];
    for pass in 0..passes {
        let output = filter_pass(&request.samples, pass);
        for (sum, &sample) in sums.iter_mut().zip(&output) {
            *sum += i64::from(sample);
        }
    }
    let mut samples = [0i16; SAMPLES];
    for (out, sum) in samples.iter_mut().zip(sums) {
        // A mean of i16 values is an i16: the clamp only states it.
        *out = sum
            .div_euclid(i64::from(passes))
            .clamp(i64::from(i16::MIN), i64::from(i16::MAX)) as i16;
    }
    FirResponse { samples }
}

/// FIR×1.
pub fn fir_x1(request: &FirRequest) -> FirResponse {
    fir(request, 1)
}

/// FIR×64.
pub fn fir_x64(request: &FirRequest) -> FirResponse {
    fir(request, 64)
}

/// FIR×512.
pub fn fir_x512(request: &FirRequest) -> FirResponse {
    fir(request, 512)
}
