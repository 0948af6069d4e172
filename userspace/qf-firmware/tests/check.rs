//! `qf firmware check` as a specification: valid images (ELF32 and ELF64, built here with the
//! `object` writer) are accepted with their table read back, and each broken variant is refused
//! with exactly its named defect at the offending file offset.

use qf_firmware::fixture::{
    image, sample_table, Layout, CARVEOUT_ANY, CARVEOUT_FIXED, RAM, TABLE_LEN, TRACE, VDEV,
};
use qf_firmware::table::Resource;
use qf_firmware::{check, check_table, report, DefectKind, Options, Rule};
use qf_resource_table::{Region, RSC_DEVMEM};

use DefectKind::*;

fn layout(is_64: bool) -> Layout {
    Layout {
        is_64,
        ..Layout::default()
    }
}

/// Kinds and file offsets of the defects, or an empty list if accepted.
fn defects(bytes: &[u8]) -> Vec<(DefectKind, u64)> {
    match check(bytes, &Options::default()) {
        Ok(_) => Vec::new(),
        Err(rejected) => rejected
            .defects
            .iter()
            .map(|defect| (defect.kind, defect.at))
            .collect(),
    }
}

fn put(bytes: &mut [u8], at: usize, value: u32) {
    bytes[at..at + 4].copy_from_slice(&value.to_le_bytes());
}

fn get(bytes: &[u8], at: usize) -> u64 {
    u64::from(u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()))
}

/// Where the ELF fields the tests change are, per class.
struct Fields {
    e_phoff: usize,
    e_shoff: usize,
    e_phnum: usize,
    phentsize: usize,
    p_offset: usize,
    p_filesz: usize,
    shentsize: usize,
    sh_type: usize,
    sh_addr: usize,
    sh_size: usize,
}

const ELF32: Fields = Fields {
    e_phoff: 0x1c,
    e_shoff: 0x20,
    e_phnum: 0x2c,
    phentsize: 32,
    p_offset: 4,
    p_filesz: 16,
    shentsize: 40,
    sh_type: 4,
    sh_addr: 12,
    sh_size: 20,
};

const ELF64: Fields = Fields {
    e_phoff: 0x20,
    e_shoff: 0x28,
    e_phnum: 0x38,
    phentsize: 56,
    p_offset: 8,
    p_filesz: 32,
    shentsize: 64,
    sh_type: 4,
    sh_addr: 16,
    sh_size: 32,
};

fn fields(is_64: bool) -> &'static Fields {
    if is_64 {
        &ELF64
    } else {
        &ELF32
    }
}

/// File offset of program header `i` and of section header `i` (section 3 is the table).
fn phdr(bytes: &[u8], f: &Fields, i: usize) -> usize {
    get(bytes, f.e_phoff) as usize + i * f.phentsize
}

fn shdr(bytes: &[u8], f: &Fields, i: usize) -> usize {
    get(bytes, f.e_shoff) as usize + i * f.shentsize
}

const TABLE_SECTION_INDEX: usize = 3;

#[test]
fn valid_images_are_accepted_with_their_table_read_back() {
    for is_64 in [false, true] {
        let built = image(&sample_table(), &layout(is_64)).unwrap();
        let report = check(&built.bytes, &Options::default())
            .unwrap_or_else(|rejected| panic!("ELF{}: {rejected:#?}", if is_64 { 64 } else { 32 }));
        assert!(report.warnings.is_empty(), "{:?}", report.warnings);
        let elf = report.elf.as_ref().unwrap();
        assert_eq!(elf.is_64, is_64);
        let section = elf.table.as_ref().unwrap();
        assert_eq!(section.offset, built.table_at);
        assert_eq!(section.size, TABLE_LEN as u64);
        assert_eq!(elf.segments.len(), 2);
        let table = report.table.as_ref().unwrap();
        let kinds: Vec<&str> = table
            .entries
            .iter()
            .map(|entry| match &entry.resource {
                Resource::Carveout(_) => "carveout",
                Resource::Vdev { vrings, .. } if vrings.len() == 2 => "vdev+2",
                Resource::Trace(_) => "trace",
                other => panic!("unexpected {other:?}"),
            })
            .collect();
        assert_eq!(kinds, ["carveout", "carveout", "vdev+2", "trace"]);
        assert_eq!(table.entries[2].at, built.table_at + VDEV as u64);
        assert_eq!(report.channels.len(), 1);
        assert_eq!(report.channels[0].name, "qfabric");
        assert_eq!(report.channels[0].section, ".rodata");
        assert_eq!(report.channels[0].at, built.rodata_at + 11);
        let text = report::render("fw.elf", &Ok(report.clone()));
        assert!(text.contains("verdict: accepted"), "{text}");
        assert!(
            text.contains("vdev: id 7 (rpmsg), dfeatures 0x1 = VIRTIO_RPMSG_F_NS"),
            "{text}"
        );
        assert!(text.contains("vring_size 230 bytes"), "{text}");
    }
}

/// A broken table: what is changed, the expected defects (table offsets).
struct Broken {
    name: &'static str,
    change: fn(&mut Vec<u8>),
    expect: &'static [(DefectKind, usize)],
}

const VDEV_BODY: usize = VDEV + 4;
const VRING0: usize = VDEV_BODY + 24;
const VRING1: usize = VRING0 + 20;

const BROKEN_TABLES: &[Broken] = &[
    Broken {
        name: "bad version",
        change: |t| put(t, 0, 2),
        expect: &[(BadVersion, 0)],
    },
    Broken {
        name: "non-zero reserved word in the header",
        change: |t| put(t, 12, 1),
        expect: &[(ReservedNotZero, 12)],
    },
    Broken {
        name: "more offsets than the section holds",
        change: |t| put(t, 4, 100),
        expect: &[(OffsetsPastEnd, 4)],
    },
    Broken {
        name: "header-less section",
        change: |t| t.truncate(12),
        expect: &[(TableHeaderless, 0)],
    },
    Broken {
        name: "offset past the section",
        change: |t| put(t, 16 + 3 * 4, TABLE_LEN as u32 - 2),
        expect: &[(EntryPastEnd, 28)],
    },
    Broken {
        name: "short last entry",
        change: |t| t.truncate(TABLE_LEN - 4),
        expect: &[(EntryTruncated, TRACE)],
    },
    Broken {
        name: "vdev whose config space runs past the end",
        change: |t| put(t, VDEV_BODY + 16, 1000),
        expect: &[(EntryTruncated, VDEV)],
    },
    Broken {
        name: "two carve-outs of one name",
        change: |t| {
            t[CARVEOUT_ANY + 4 + 20..CARVEOUT_ANY + 4 + 20 + 12]
                .copy_from_slice(b"shared\0\0\0\0\0\0")
        },
        expect: &[(DuplicateCarveoutName, CARVEOUT_ANY + 24)],
    },
    Broken {
        name: "two carve-outs whose names differ after byte 31",
        change: |t| {
            t[CARVEOUT_FIXED + 24..CARVEOUT_FIXED + 56].copy_from_slice(&[b'a'; 32]);
            t[CARVEOUT_ANY + 24..CARVEOUT_ANY + 56].copy_from_slice(&[b'a'; 32]);
            t[CARVEOUT_ANY + 24 + 31] = b'b';
        },
        expect: &[(DuplicateCarveoutName, CARVEOUT_ANY + 24)],
    },
    Broken {
        name: "two offsets to one entry",
        change: |t| put(t, 16 + 4, CARVEOUT_FIXED as u32),
        expect: &[
            (DuplicateCarveoutName, CARVEOUT_FIXED + 24),
            (EntriesOverlap, CARVEOUT_FIXED),
        ],
    },
    Broken {
        name: "unknown type",
        change: |t| put(t, TRACE, 7),
        expect: &[(UnknownType, TRACE)],
    },
    Broken {
        name: "non-zero reserved word in a carveout",
        change: |t| put(t, CARVEOUT_FIXED + 4 + 16, 1),
        expect: &[(ReservedNotZero, CARVEOUT_FIXED + 20)],
    },
    Broken {
        name: "non-zero reserved byte in the vdev",
        change: |t| t[VDEV_BODY + 23] = 1,
        expect: &[(ReservedNotZero, VDEV_BODY + 22)],
    },
    Broken {
        name: "non-zero reserved word in the trace",
        change: |t| put(t, TRACE + 4 + 8, 1),
        expect: &[(ReservedNotZero, TRACE + 12)],
    },
    Broken {
        name: "num_of_vrings 1 for two vrings",
        change: |t| t[VDEV_BODY + 21] = 1,
        expect: &[(RpmsgVringCount, VDEV_BODY + 21)],
    },
    Broken {
        name: "num_of_vrings 3",
        change: |t| t[VDEV_BODY + 21] = 3,
        expect: &[(TooManyVrings, VDEV_BODY + 21), (EntriesOverlap, TRACE)],
    },
    Broken {
        name: "vring num 0",
        change: |t| put(t, VRING1 + 8, 0),
        expect: &[(VringZero, VRING1 + 8)],
    },
    Broken {
        name: "vring align 0",
        change: |t| put(t, VRING0 + 4, 0),
        expect: &[(VringZero, VRING0 + 4)],
    },
    Broken {
        name: "vring num not a power of two",
        change: |t| {
            put(t, VRING0 + 8, 6);
            put(t, VRING1 + 8, 6);
        },
        expect: &[
            (VringNumNotPowerOfTwo, VRING0 + 8),
            (VringNumNotPowerOfTwo, VRING1 + 8),
        ],
    },
    Broken {
        name: "vring align not a power of two",
        change: |t| put(t, VRING1 + 4, 24),
        expect: &[(VringAlignNotPowerOfTwo, VRING1 + 4)],
    },
    Broken {
        name: "vrings of different sizes",
        change: |t| put(t, VRING1 + 8, 16),
        expect: &[(VringsAsymmetric, VRING1 + 8)],
    },
    Broken {
        name: "no VIRTIO_RPMSG_F_NS",
        change: |t| put(t, VDEV_BODY + 8, 0),
        expect: &[(MissingNsFeature, VDEV_BODY + 8)],
    },
    Broken {
        name: "vdev of another virtio device",
        change: |t| put(t, VDEV_BODY, 3),
        expect: &[(NoRpmsgVdev, 0)],
    },
    Broken {
        name: "carveout outside loadable memory",
        change: |t| put(t, CARVEOUT_FIXED + 4, 0x3000_0000),
        expect: &[(CarveoutOutsideImage, CARVEOUT_FIXED + 4)],
    },
    Broken {
        name: "carveout running past the end of RAM",
        change: |t| put(t, CARVEOUT_FIXED + 4 + 8, 0x3001),
        expect: &[(CarveoutOutsideImage, CARVEOUT_FIXED + 4)],
    },
    Broken {
        name: "trace outside loadable memory",
        change: |t| put(t, TRACE + 4, 0x0700_0000),
        expect: &[(TraceOutsideImage, TRACE + 4)],
    },
];

#[test]
fn each_broken_table_is_refused_with_its_defect_at_its_offset_in_elf32_and_elf64() {
    for is_64 in [false, true] {
        for broken in BROKEN_TABLES {
            let mut table = sample_table();
            (broken.change)(&mut table);
            let built = image(&table, &layout(is_64)).unwrap();
            let expect: Vec<(DefectKind, u64)> = broken
                .expect
                .iter()
                .map(|&(kind, at)| (kind, built.table_at + at as u64))
                .collect();
            assert_eq!(
                defects(&built.bytes),
                expect,
                "{} (ELF{})",
                broken.name,
                if is_64 { 64 } else { 32 }
            );
        }
    }
}

#[test]
fn a_bare_table_gets_the_same_defects_at_table_offsets() {
    for broken in BROKEN_TABLES {
        let mut table = sample_table();
        (broken.change)(&mut table);
        let expect: Vec<(DefectKind, u64)> = broken
            .expect
            .iter()
            .filter(|(kind, _)| !matches!(kind, CarveoutOutsideImage | TraceOutsideImage))
            .map(|&(kind, at)| (kind, at as u64))
            .collect();
        let found = match check_table(&table, &Options::default()) {
            Ok(_) => Vec::new(),
            Err(rejected) => rejected.defects.iter().map(|d| (d.kind, d.at)).collect(),
        };
        assert_eq!(found, expect, "{} (bare table)", broken.name);
    }
}

/// A broken image: what is changed in the built bytes, and the expected defect.
type Change = fn(&mut Vec<u8>, &Fields) -> (DefectKind, usize);

const BROKEN_IMAGES: &[(&str, Change)] = &[
    ("shorter than an ELF header", |b, _| {
        b.truncate(40);
        (ElfTooSmall, 0)
    }),
    ("bad magic", |b, _| {
        b[1] = b'X';
        (BadMagic, 0)
    }),
    ("unknown class", |b, _| {
        b[4] = 3;
        (UnsupportedClass, 4)
    }),
    ("e_phnum 0", |b, f| {
        b[f.e_phnum..f.e_phnum + 2].copy_from_slice(&[0, 0]);
        (NoProgramHeaders, f.e_phnum)
    }),
    ("e_phoff past the end", |b, f| {
        let len = b.len() as u32;
        put(b, f.e_phoff, len + 1);
        (ProgramHeadersPastEnd, f.e_phoff)
    }),
    ("truncated inside the first section header", |b, f| {
        let cut = get(b, f.e_shoff) as usize + f.shentsize / 2;
        b.truncate(cut);
        (SectionHeadersPastEnd, f.e_shoff)
    }),
    ("truncated inside the last section header", |b, f| {
        let len = b.len();
        b.truncate(len - 4);
        (MalformedElf, f.e_shoff)
    }),
    ("segment with p_filesz over p_memsz", |b, f| {
        let at = phdr(b, f, 1);
        put(b, at + f.p_filesz, 0x10000);
        (SegmentFileszOverMemsz, at)
    }),
    ("segment past the end of the file", |b, f| {
        let at = phdr(b, f, 1);
        let len = b.len() as u32;
        put(b, at + f.p_offset, len);
        (SegmentPastEnd, at)
    }),
    ("table section past the end of the file", |b, f| {
        let at = shdr(b, f, TABLE_SECTION_INDEX);
        put(b, at + f.sh_size, 0x10_0000);
        (TablePastEnd, at)
    }),
    ("table section without file contents", |b, f| {
        let at = shdr(b, f, TABLE_SECTION_INDEX);
        put(b, at + f.sh_type, object::elf::SHT_NOBITS);
        (TableNotInFile, at)
    }),
    ("table section at an address no segment loads", |b, f| {
        let at = shdr(b, f, TABLE_SECTION_INDEX);
        put(b, at + f.sh_addr, (RAM + 0x3000) as u32);
        (TableNotLoaded, at)
    }),
];

#[test]
fn each_broken_image_is_refused_with_its_defect_at_its_offset_in_elf32_and_elf64() {
    for is_64 in [false, true] {
        let f = fields(is_64);
        for (name, change) in BROKEN_IMAGES {
            let mut bytes = image(&sample_table(), &layout(is_64)).unwrap().bytes;
            let (kind, at) = change(&mut bytes, f);
            assert_eq!(
                defects(&bytes),
                [(kind, at as u64)],
                "{name} (ELF{})",
                if is_64 { 64 } else { 32 }
            );
        }
    }
}

#[test]
fn an_image_without_a_resource_table_section_is_refused() {
    for is_64 in [false, true] {
        let layout = Layout {
            table_section: b".rsc_table".to_vec(),
            ..layout(is_64)
        };
        let bytes = image(&sample_table(), &layout).unwrap().bytes;
        assert_eq!(
            defects(&bytes),
            [(NoResourceTable, fields(is_64).e_shoff as u64)]
        );
        // the report still describes the image
        let rejected = check(&bytes, &Options::default()).unwrap_err();
        let elf = rejected.report.elf.as_ref().expect("the ELF was read");
        assert_eq!((elf.segments.len(), elf.table.is_none()), (2, true));
        assert_eq!(rejected.report.channels.len(), 1);
    }
}

#[test]
fn a_big_endian_image_is_refused_at_ei_data() {
    for is_64 in [false, true] {
        let layout = Layout {
            big_endian: true,
            ..layout(is_64)
        };
        let bytes = image(&sample_table(), &layout).unwrap().bytes;
        assert_eq!(defects(&bytes), [(BigEndian, 5)]);
    }
}

#[test]
fn an_elf64_header_cut_short_is_too_small() {
    let mut bytes = image(&sample_table(), &layout(true)).unwrap().bytes;
    bytes.truncate(60); // enough for ELF32's 52, not for ELF64's 64
    assert_eq!(defects(&bytes), [(ElfTooSmall, 0)]);
}

#[test]
fn a_carveout_inside_a_devmem_entry_is_declared_device_memory() {
    let mut table = sample_table();
    put(&mut table, CARVEOUT_FIXED + 4, 0x4000_1000);
    // entry 1 becomes a devmem entry covering the carve-out
    put(&mut table, CARVEOUT_ANY, RSC_DEVMEM);
    put(&mut table, CARVEOUT_ANY + 4 + Region::DA, 0x4000_0000);
    put(&mut table, CARVEOUT_ANY + 4 + Region::PA, 0x4000_0000);
    put(&mut table, CARVEOUT_ANY + 4 + Region::LEN, 0x1_0000);
    let bytes = image(&table, &Layout::default()).unwrap().bytes;
    let report = check(&bytes, &Options::default()).expect("accepted");
    // ... with the warning that Linux wants an IOMMU for devmem
    assert_eq!(report.warnings.len(), 1);
    assert!(report.warnings[0].text.contains("IOMMU"));
    // and without the devmem entry the same carve-out is refused
    put(&mut table, CARVEOUT_ANY + 4 + Region::LEN, 0x1000);
    let bytes = image(&table, &Layout::default()).unwrap().bytes;
    assert!(defects(&bytes).contains(&(
        CarveoutOutsideImage,
        image(&table, &Layout::default()).unwrap().table_at + CARVEOUT_FIXED as u64 + 4
    )));
}

#[test]
fn a_vendor_entry_is_a_warning_not_a_defect() {
    let mut table = sample_table();
    put(&mut table, TRACE, 200);
    let built = image(&table, &Layout::default()).unwrap();
    let report = check(&built.bytes, &Options::default()).expect("accepted");
    assert_eq!(report.warnings.len(), 1);
    assert_eq!(report.warnings[0].at, built.table_at + TRACE as u64);
    assert!(report.warnings[0].text.contains("vendor type 200"));
}

#[test]
fn a_missing_channel_name_is_a_warning_and_other_names_can_be_looked_for() {
    let layout = Layout {
        rodata: b"serving %s\0libqfabric\0rpmsg-tty\0".to_vec(),
        ..Layout::default()
    };
    let built = image(&sample_table(), &layout).unwrap();
    let report = check(&built.bytes, &Options::default()).expect("accepted");
    assert!(report.channels.is_empty());
    assert_eq!(report.warnings.len(), 1);
    assert!(report.warnings[0].text.contains("\"qfabric\" not found"));
    let options = Options {
        channels: vec!["rpmsg-tty".to_string()],
        ..Options::default()
    };
    let report = check(&built.bytes, &options).expect("accepted");
    assert_eq!(report.channels.len(), 1);
    assert_eq!(report.channels[0].at, built.rodata_at + 22);
    assert!(report.warnings.is_empty());
}

#[test]
fn allowing_a_qfabric_rule_turns_it_into_a_warning_and_linux_rules_stay() {
    let mut table = sample_table();
    put(&mut table, CARVEOUT_FIXED + 4, 0x3000_0000);
    put(&mut table, 0, 2); // and a Linux rule broken as well: the version
    let bytes = image(&table, &Layout::default()).unwrap().bytes;
    let options = Options {
        allow: vec![CarveoutOutsideImage, BadVersion],
        ..Options::default()
    };
    let rejected = check(&bytes, &options).expect_err("the version still refuses it");
    assert_eq!(rejected.defects.len(), 1);
    assert_eq!(rejected.defects[0].kind, BadVersion);

    put(&mut table, 0, 1);
    let bytes = image(&table, &Layout::default()).unwrap().bytes;
    let report = check(&bytes, &options).expect("allowed");
    assert_eq!(report.warnings.len(), 1);
    assert!(report.warnings[0]
        .text
        .starts_with("allowed carveout-outside-image"));
}

#[test]
fn the_report_names_each_defect_with_its_rule_and_offset() {
    let mut table = sample_table();
    put(&mut table, VRING1 + 8, 6);
    put(&mut table, VRING0 + 8, 6);
    put(&mut table, VDEV_BODY + 8, 0);
    let built = image(&table, &Layout::default()).unwrap();
    let result = check(&built.bytes, &Options::default());
    let text = report::render("fw.elf", &result);
    let at = built.table_at + VRING0 as u64 + 8;
    assert!(
        text.contains(&format!(
            "{at:#08x} vring-num-not-power-of-two [linux]: entry 2 (vdev) vring0 num is 6"
        )),
        "{text}"
    );
    assert!(text.contains("missing-ns-feature [qfabric]"), "{text}");
    assert!(
        text.contains("verdict: refused, 3 defect(s): 2 of Linux's rules, 1 of qfabric's"),
        "{text}"
    );
}

#[test]
fn every_defect_kind_has_a_unique_name_and_a_reason() {
    for kind in DefectKind::ALL {
        assert_eq!(DefectKind::from_name(kind.name()), Some(*kind));
        assert!(!kind.why().is_empty());
    }
    // the kinds this file exercises cover all of them
    let mut seen: Vec<DefectKind> = BROKEN_TABLES
        .iter()
        .flat_map(|broken| broken.expect.iter().map(|(kind, _)| *kind))
        .collect();
    for (_, change) in BROKEN_IMAGES {
        let mut bytes = image(&sample_table(), &Layout::default()).unwrap().bytes;
        seen.push(change(&mut bytes, &ELF32).0);
    }
    seen.extend([NoResourceTable, BigEndian]);
    let missing: Vec<&DefectKind> = DefectKind::ALL
        .iter()
        .filter(|kind| !seen.contains(kind))
        .collect();
    // MalformedElf is exercised above; every other kind must be too.
    assert!(missing.is_empty(), "kinds no test produces: {missing:?}");
    assert!(DefectKind::ALL
        .iter()
        .any(|kind| kind.rule() == Rule::Linux));
}

#[test]
fn the_documentation_lists_every_defect_with_its_rule() {
    let doc = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/firmware-check.md"
    ))
    .unwrap();
    for kind in DefectKind::ALL {
        let row = format!("| `{}` | {} |", kind.name(), kind.rule());
        assert!(
            doc.contains(&row),
            "docs/firmware-check.md lacks the row {row}"
        );
    }
}

#[test]
fn a_second_resource_table_section_is_a_warning_and_linux_reads_the_first() {
    // .rodata holds a valid table too (and the channel name after it)
    let mut rodata = sample_table();
    rodata.extend_from_slice(b"\0qfabric\0");
    let layout = Layout {
        rodata,
        ..Layout::default()
    };
    let mut built = image(&sample_table(), &layout).unwrap();
    let report = check(&built.bytes, &Options::default()).expect("accepted");
    assert!(report.warnings.is_empty(), "{:?}", report.warnings);
    assert_eq!(report.elf.unwrap().table.unwrap().offset, built.table_at);
    // .rodata (section 2, before the table's section 3) renamed .resource_table
    let table_name = get(
        &built.bytes,
        shdr(&built.bytes, &ELF32, TABLE_SECTION_INDEX),
    );
    let rodata_header = shdr(&built.bytes, &ELF32, 2);
    put(&mut built.bytes, rodata_header, table_name as u32);
    let report = check(&built.bytes, &Options::default()).expect("the first is valid");
    assert_eq!(report.warnings.len(), 1, "{:?}", report.warnings);
    assert!(report.warnings[0]
        .text
        .starts_with("2 sections are named .resource_table"));
    assert_eq!(report.elf.unwrap().table.unwrap().offset, built.rodata_at);
}
