//! Each kernel against an independent reference written differently here: the CRC-32 check value
//! and a table-driven CRC, FIR against a direct 64-bit convolution, add against 64-bit arithmetic.

use proptest::prelude::*;
use qf_tasks::kernels::{self, crc32_of, fir::COEFFICIENTS};
use qf_tasks::{AddRequest, Crc32Request, FirRequest};

/// Table-driven CRC-32 (IEEE 802.3, reflected), the textbook byte-at-a-time form.
fn reference_crc32(bytes: &[u8]) -> u32 {
    let table: Vec<u32> = (0..256u32)
        .map(|index| {
            (0..8).fold(index, |c, _| {
                if c & 1 == 1 {
                    0xEDB8_8320 ^ (c >> 1)
                } else {
                    c >> 1
                }
            })
        })
        .collect();
    !bytes.iter().fold(!0u32, |crc, &b| {
        table[((crc ^ u32::from(b)) & 0xFF) as usize] ^ (crc >> 8)
    })
}

/// Q15 triangular taps from their definition, in floating point.
fn reference_taps() -> Vec<i64> {
    (0..16)
        .map(|k| {
            let weight = if k < 8 { k + 1 } else { 16 - k } as f64;
            (weight * 32768.0 / 72.0).round() as i64
        })
        .collect()
}

/// FIR: each pass convolves the perturbed input exactly in i64 (floor division, clamp at the
/// end); the result is the floor of the mean over passes.
fn reference_fir(samples: &[i16; 32], passes: u32) -> [i16; 32] {
    if passes == 0 {
        return *samples;
    }
    let taps = reference_taps();
    let clamp = |v: i64| v.clamp(-32768, 32767);
    let mut totals = [0i64; 32];
    for pass in 0..i64::from(passes) {
        let input: Vec<i64> = (0..32)
            .map(|n| clamp(i64::from(samples[n]) + (pass * 37 + n as i64 * 11) % 61 - 30))
            .collect();
        for (n, total) in totals.iter_mut().enumerate() {
            let sum: i64 = (0..16)
                .filter(|&k| k <= n)
                .map(|k| taps[k] * input[n - k])
                .sum();
            *total += clamp((sum + 16384).div_euclid(32768));
        }
    }
    totals.map(|total| total.div_euclid(i64::from(passes)) as i16)
}

#[test]
fn crc32_check_value_of_123456789_is_cbf43926() {
    assert_eq!(crc32_of(b"123456789"), 0xCBF4_3926);
    assert_eq!(reference_crc32(b"123456789"), 0xCBF4_3926);
}

#[test]
fn crc32_of_the_empty_input_is_zero() {
    assert_eq!(crc32_of(&[]), 0);
}

#[test]
fn the_taps_are_the_triangle_normalised_to_unity_gain() {
    let expected: Vec<i16> = reference_taps().into_iter().map(|t| t as i16).collect();
    assert_eq!(COEFFICIENTS.to_vec(), expected);
    assert_eq!(
        COEFFICIENTS.iter().map(|&t| i32::from(t)).sum::<i32>(),
        32768
    );
}

#[test]
fn fir_at_the_rails_saturates_instead_of_wrapping() {
    for rail in [i16::MAX, i16::MIN] {
        let request = FirRequest {
            samples: [rail; 32],
        };
        for passes in [1, 64, 512] {
            assert_eq!(
                kernels::fir(&request, passes).samples,
                reference_fir(&request.samples, passes)
            );
        }
    }
}

#[test]
fn fir_x1_x64_x512_are_1_64_and_512_passes() {
    let request = FirRequest {
        samples: core::array::from_fn(|n| (n as i16 - 16) * 1000),
    };
    assert_eq!(
        kernels::fir_x1(&request).samples,
        reference_fir(&request.samples, 1)
    );
    assert_eq!(
        kernels::fir_x64(&request).samples,
        reference_fir(&request.samples, 64)
    );
    assert_eq!(
        kernels::fir_x512(&request).samples,
        reference_fir(&request.samples, 512)
    );
    assert_ne!(
        kernels::fir_x1(&request),
        kernels::fir_x64(&request),
        "passes matter"
    );
    assert_ne!(
        kernels::fir_x64(&request),
        kernels::fir_x512(&request),
        "passes matter"
    );
}

#[test]
fn add_wraps_on_overflow() {
    let response = kernels::add(&AddRequest { a: i32::MAX, b: 1 });
    assert_eq!(response.value, i32::MIN);
    let response = kernels::add(&AddRequest { a: i32::MIN, b: -1 });
    assert_eq!(response.value, i32::MAX);
}

proptest! {
    #[test]
    fn crc32_matches_the_table_driven_reference(block in proptest::array::uniform32(any::<u8>()), tail in proptest::array::uniform32(any::<u8>())) {
        let mut bytes = [0u8; 64];
        bytes[..32].copy_from_slice(&block);
        bytes[32..].copy_from_slice(&tail);
        prop_assert_eq!(kernels::crc32(&Crc32Request { block: bytes }).crc, reference_crc32(&bytes));
    }

    #[test]
    fn fir_matches_the_direct_i64_convolution(samples in proptest::array::uniform32(any::<i16>()), passes in 0u32..100) {
        let request = FirRequest { samples };
        prop_assert_eq!(kernels::fir(&request, passes).samples, reference_fir(&samples, passes));
    }

    #[test]
    fn add_is_i64_addition_reduced_mod_2_pow_32(a in any::<i32>(), b in any::<i32>()) {
        let exact = i64::from(a) + i64::from(b);
        let wrapped = (exact.rem_euclid(1 << 32)) as u32 as i32;
        prop_assert_eq!(kernels::add(&AddRequest { a, b }).value, wrapped);
    }
}
