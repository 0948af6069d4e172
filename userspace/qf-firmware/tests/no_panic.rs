//! No input makes the check panic, the same input always gets the same answer, and every defect
//! points into the file: valid images with bytes overwritten and cut short, random words written
//! into the sample table, random tables inside a valid ELF, and random whole files.

use proptest::prelude::*;
use proptest::sample::Index;

use qf_firmware::fixture::{image, sample_table, Layout, TABLE_LEN};
use qf_firmware::{check, check_table, report, Options, Rejected, Report};

fn answer(bytes: &[u8], bare: bool) -> Result<Report, Rejected> {
    let options = Options::default();
    let first = if bare {
        check_table(bytes, &options)
    } else {
        check(bytes, &options)
    };
    let again = if bare {
        check_table(bytes, &options)
    } else {
        check(bytes, &options)
    };
    assert_eq!(first, again, "two answers for one input");
    if let Err(rejected) = &first {
        assert!(!rejected.defects.is_empty());
        for defect in &rejected.defects {
            assert!(defect.at <= bytes.len() as u64, "{defect} is past the end");
        }
    }
    let text = report::render("input", &first);
    assert!(text.contains("verdict: "));
    first
}

fn layout(is_64: bool) -> Layout {
    Layout {
        is_64,
        ..Layout::default()
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn a_valid_image_with_bytes_overwritten_and_cut_gets_one_answer(
        is_64: bool,
        writes in proptest::collection::vec((any::<Index>(), any::<u8>()), 1..12),
        cut in proptest::option::of(any::<Index>()),
    ) {
        let mut bytes = image(&sample_table(), &layout(is_64)).unwrap().bytes;
        for (at, byte) in writes {
            let at = at.index(bytes.len());
            bytes[at] = byte;
        }
        if let Some(cut) = cut {
            let len = cut.index(bytes.len() + 1);
            bytes.truncate(len);
        }
        let _ = answer(&bytes, false);
    }

    #[test]
    fn random_words_in_the_sample_table_get_one_answer(
        is_64: bool,
        words in proptest::collection::vec((0..TABLE_LEN / 4, any::<u32>()), 1..6),
    ) {
        let mut table = sample_table();
        for (word, value) in words {
            table[4 * word..4 * word + 4].copy_from_slice(&value.to_le_bytes());
        }
        let _ = answer(&image(&table, &layout(is_64)).unwrap().bytes, false);
        let _ = answer(&table, true);
    }

    #[test]
    fn any_bytes_as_the_table_of_a_valid_image_get_one_answer(
        is_64: bool,
        table in proptest::collection::vec(any::<u8>(), 0..600),
    ) {
        let _ = answer(&image(&table, &layout(is_64)).unwrap().bytes, false);
        let _ = answer(&table, true);
    }

    #[test]
    fn any_bytes_as_a_whole_file_get_one_answer(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
        let refused = answer(&bytes, false).is_err();
        // Random bytes are not an ELF with a valid table.
        prop_assert!(refused);
    }
}
