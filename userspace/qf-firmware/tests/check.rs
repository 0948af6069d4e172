//! `qf firmware check` as a specification: valid images (ELF32 and ELF64, built here with the
//! `object` writer) are accepted with their table read back, and each broken variant gets
//! exactly its named finding at the offending file offset, and the verdict Linux 6.12 gives:
//! refused for a [linux] rule, accepted with advice otherwise (refused under --strict).

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

fn strict() -> Options {
    let options = Options::default();
    assert!(options.strict, "the library's default is strict");
    options
}

/// Kinds and file offsets of every finding (what `--strict` refuses for), or an empty list.
fn defects(bytes: &[u8]) -> Vec<(DefectKind, u64)> {
    match check(bytes, &strict()) {
        Ok(_) => Vec::new(),
        Err(rejected) => rejected
            .defects
            .iter()
            .map(|defect| (defect.kind, defect.at))
            .collect(),
    }
}

/// Whether Linux 6.12 loads and starts the image (the exit status without `--strict`), checked
/// against the rules of the findings: refused exactly when one of them is Linux's.
fn accepted(bytes: &[u8]) -> bool {
    let verdict = check(bytes, &Options::linux()).is_ok();
    let refusing = defects(bytes).iter().any(|(kind, _)| kind.rule().refuses());
    assert_eq!(
        verdict, !refusing,
        "the verdict follows the findings' rules"
    );
    verdict
}

fn put(bytes: &mut [u8], at: usize, value: u32) {
    bytes[at..at + 4].copy_from_slice(&value.to_le_bytes());
}

fn get(bytes: &[u8], at: usize) -> u64 {
    u64::from(u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()))
}

/// Where the ELF fields the tests change are, per class.
struct Fields {
    e_shstrndx: usize,
    e_shnum: usize,
    p_memsz: usize,
    sh_link: usize,
    sh_info: usize,
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
    e_shstrndx: 0x32,
    e_shnum: 0x30,
    p_memsz: 20,
    sh_link: 24,
    sh_info: 28,
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
    e_shstrndx: 0x3e,
    e_shnum: 0x3c,
    p_memsz: 40,
    sh_link: 40,
    sh_info: 44,
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
/// The section-name table is the last section of the fixture.
const SHSTRTAB_INDEX: usize = 6;

fn put16(bytes: &mut [u8], at: usize, value: u16) {
    bytes[at..at + 2].copy_from_slice(&value.to_le_bytes());
}

#[test]
fn valid_images_are_accepted_with_their_table_read_back() {
    for is_64 in [false, true] {
        let built = image(&sample_table(), &layout(is_64)).unwrap();
        let report = check(&built.bytes, &Options::linux())
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
            // the verdict is Linux's: refused exactly when one of the rules is
            let refuses = expect.iter().any(|(kind, _)| kind.rule().refuses());
            assert_eq!(accepted(&built.bytes), !refuses, "{}", broken.name);
        }
        // and the same image without the change passes every rule
        let sample = image(&sample_table(), &layout(is_64)).unwrap();
        assert_eq!(defects(&sample.bytes), []);
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
        let found = match check_table(&table, &strict()) {
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
    (
        "truncated inside the section-name table's sh_offset",
        |b, f| {
            let cut = shdr(b, f, SHSTRTAB_INDEX) + f.sh_size - 2;
            b.truncate(cut);
            (ReadPastEnd, f.e_shstrndx)
        },
    ),
    (
        "e_shstrndx 0xffff (extended numbering: the index in section 0's sh_link)",
        |b, f| {
            let at = shdr(b, f, 0);
            put(b, at + f.sh_link, SHSTRTAB_INDEX as u32);
            put16(b, f.e_shstrndx, 0xffff);
            (ReadPastEnd, f.e_shstrndx)
        },
    ),
    (
        "e_phnum 0xffff (extended numbering: the count in section 0's sh_info)",
        |b, f| {
            let at = shdr(b, f, 0);
            put(b, at + f.sh_info, 2);
            put16(b, f.e_phnum, 0xffff);
            (ReadPastEnd, f.e_phnum)
        },
    ),
    (
        "e_shnum 0 (extended numbering: the count in section 0's sh_size)",
        |b, f| {
            let at = shdr(b, f, 0);
            put(b, at + f.sh_size, SHSTRTAB_INDEX as u32 + 1);
            put16(b, f.e_shnum, 0);
            (NoResourceTable, f.e_shoff)
        },
    ),
    ("a section name past the end of the file", |b, f| {
        let at = shdr(b, f, 1);
        put(b, at, 0x100_0000);
        (ReadPastEnd, at)
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
    ("EI_VERSION 0", |b, _| {
        b[6] = 0;
        (MalformedElf, 6)
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
            let found = defects(&bytes);
            // extended numbering is also qfabric's advice (malformed-elf at e_shnum)
            let extended = (MalformedElf, f.e_shnum as u64);
            assert_eq!(
                found.contains(&extended),
                name.contains("extended numbering"),
                "{name}: {found:?}"
            );
            let found: Vec<_> = found
                .into_iter()
                .filter(|&(k, at)| {
                    !(k == MalformedElf && at == f.e_shnum as u64 && kind != MalformedElf)
                })
                .collect();
            assert_eq!(
                found,
                [(kind, at as u64)],
                "{name} (ELF{})",
                if is_64 { 64 } else { 32 }
            );
            assert_eq!(accepted(&bytes), !kind.rule().refuses(), "{name}");
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
        let rejected = check(&bytes, &Options::linux()).unwrap_err();
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
    let report = check(&bytes, &Options::linux()).expect("accepted");
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
    let report = check(&built.bytes, &Options::linux()).expect("accepted");
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
    let report = check(&built.bytes, &Options::linux()).expect("accepted");
    assert!(report.channels.is_empty());
    assert_eq!(report.warnings.len(), 1);
    assert!(report.warnings[0].text.contains("\"qfabric\" not found"));
    let options = Options {
        channels: vec!["rpmsg-tty".to_string()],
        ..Options::linux()
    };
    let report = check(&built.bytes, &options).expect("accepted");
    assert_eq!(report.channels.len(), 1);
    assert_eq!(report.channels[0].at, built.rodata_at + 22);
    assert!(report.warnings.is_empty());
}

#[test]
fn advice_does_not_refuse_unless_strict_and_allow_keeps_it_advice_under_strict() {
    // a fixed carve-out outside the image: Linux allocates it and starts the firmware
    let mut table = sample_table();
    put(&mut table, CARVEOUT_FIXED + 4, 0x3000_0000);
    let built = image(&table, &Layout::default()).unwrap();
    let report = check(&built.bytes, &Options::linux()).expect("Linux loads it");
    let advice: Vec<_> = report.advice.iter().map(|d| (d.kind, d.at)).collect();
    assert_eq!(
        advice,
        [(
            CarveoutOutsideImage,
            built.table_at + CARVEOUT_FIXED as u64 + 4
        )]
    );
    let rejected = check(&built.bytes, &strict()).expect_err("--strict refuses it");
    assert_eq!(rejected.defects[0].kind, CarveoutOutsideImage);
    let allowed = Options {
        allow: vec![CarveoutOutsideImage],
        ..strict()
    };
    let report = check(&built.bytes, &allowed).expect("allowed under --strict");
    assert_eq!(report.advice.len(), 1);
    let text = report::render("fw.elf", &Ok(report));
    assert!(text.contains("carveout-outside-image [qfabric]"), "{text}");
    assert!(text.contains("verdict: accepted"), "{text}");

    // a rule Linux refuses for stays a refusal, whatever is allowed
    put(&mut table, 0, 2);
    let bytes = image(&table, &Layout::default()).unwrap().bytes;
    let options = Options {
        allow: vec![CarveoutOutsideImage, BadVersion],
        ..Options::linux()
    };
    let rejected = check(&bytes, &options).expect_err("the version refuses it");
    assert_eq!(rejected.defects.len(), 1);
    assert_eq!(rejected.defects[0].kind, BadVersion);
}

#[test]
fn advice_about_the_elf_header_never_stops_the_rest_of_the_check() {
    for is_64 in [false, true] {
        let f = fields(is_64);
        let lenient = Options {
            allow: vec![MalformedElf],
            ..strict()
        };
        // EI_VERSION 0 (the object crate refuses to read such a header) and no .resource_table
        let layout = Layout {
            table_section: b".rsc_table".to_vec(),
            ..layout(is_64)
        };
        let mut bytes = image(&sample_table(), &layout).unwrap().bytes;
        bytes[6] = 0;
        let rejected = check(&bytes, &lenient).expect_err("no table");
        let kinds: Vec<_> = rejected.defects.iter().map(|d| (d.kind, d.at)).collect();
        assert_eq!(kinds, [(NoResourceTable, f.e_shoff as u64)]);
        // EI_VERSION 0 and table version 2
        let mut table = sample_table();
        put(&mut table, 0, 2);
        let built = image(&table, &self::layout(is_64)).unwrap();
        let mut bytes = built.bytes;
        bytes[6] = 0;
        let rejected = check(&bytes, &lenient).expect_err("version 2");
        let kinds: Vec<_> = rejected.defects.iter().map(|d| (d.kind, d.at)).collect();
        assert_eq!(kinds, [(BadVersion, built.table_at)]);
        // and e_phentsize 0 is advice too: Linux steps by the class's header size
        let mut bytes = image(&sample_table(), &self::layout(is_64)).unwrap().bytes;
        let e_phentsize = if is_64 { 0x36 } else { 0x2a };
        put16(&mut bytes, e_phentsize, 0);
        assert_eq!(defects(&bytes), [(MalformedElf, e_phentsize as u64)]);
        assert!(accepted(&bytes));
    }
}

#[test]
fn a_load_segment_of_memsz_0_is_skipped_as_linux_skips_it() {
    for is_64 in [false, true] {
        let f = fields(is_64);
        let mut bytes = image(&sample_table(), &layout(is_64)).unwrap().bytes;
        let at = phdr(&bytes, f, 1);
        // p_memsz 0 with p_filesz 16: skipped (remoteproc_elf_loader.c:184)
        put(&mut bytes, at + f.p_memsz, 0);
        if is_64 {
            put(&mut bytes, at + f.p_memsz + 4, 0);
        }
        assert!(accepted(&bytes), "{:?}", defects(&bytes));
        let report = check(&bytes, &Options::linux()).unwrap();
        assert_eq!(report.elf.as_ref().unwrap().segments.len(), 1);
        // ... which is not p_memsz 1 with p_filesz 16
        put(&mut bytes, at + f.p_memsz, 1);
        assert!(defects(&bytes).contains(&(SegmentFileszOverMemsz, at as u64)));
        assert!(!accepted(&bytes));
    }
}

#[test]
fn a_trace_buffer_inside_a_fixed_carveout_is_where_rproc_da_to_va_finds_it() {
    let mut table = sample_table();
    put(&mut table, CARVEOUT_FIXED + 4, 0x3000_0000); // carve-out outside the image
    put(&mut table, TRACE + 4, 0x3000_0100); // trace inside the carve-out
    let built = image(&table, &Layout::default()).unwrap();
    assert_eq!(
        defects(&built.bytes),
        [(
            CarveoutOutsideImage,
            built.table_at + CARVEOUT_FIXED as u64 + 4
        )]
    );
    // past the carve-out's end it is outside again
    put(&mut table, TRACE + 4, 0x3000_0fff);
    let built = image(&table, &Layout::default()).unwrap();
    assert!(defects(&built.bytes).contains(&(TraceOutsideImage, built.table_at + TRACE as u64 + 4)));
}

#[test]
fn section_names_are_read_from_the_file_whatever_the_name_tables_sh_size() {
    for is_64 in [false, true] {
        let f = fields(is_64);
        let mut bytes = image(&sample_table(), &layout(is_64)).unwrap().bytes;
        let at = shdr(&bytes, f, SHSTRTAB_INDEX);
        put(&mut bytes, at + f.sh_size, 1);
        if is_64 {
            put(&mut bytes, at + f.sh_size + 4, 0);
        }
        assert_eq!(defects(&bytes), []);
        // the whole image still is what Linux reads: cut inside a name, the compare runs off
        let table_header = shdr(&bytes, f, TABLE_SECTION_INDEX);
        let names = get(&bytes, at + if is_64 { 24 } else { 16 });
        let len = bytes.len();
        put(&mut bytes, table_header, (len as u64 - 3 - names) as u32);
        bytes[len - 3..].copy_from_slice(b".re");
        assert_eq!(defects(&bytes), [(ReadPastEnd, table_header as u64)]);
    }
}

/// A table whose first carve-out has `name` (at most 32 bytes).
fn named(name: &[u8]) -> Vec<u8> {
    let mut table = sample_table();
    let field = CARVEOUT_FIXED + 4 + Region::NAME;
    table[field..field + 32].fill(0);
    table[field..field + name.len()].copy_from_slice(name);
    table
}

#[test]
fn a_carveout_name_is_a_format_string_to_linux() {
    let field = (CARVEOUT_FIXED + 4 + Region::NAME) as u64;
    // %s: vsnprintf dereferences an argument that is not there: refused
    let built = image(&named(b"shared%s"), &Layout::default()).unwrap();
    assert_eq!(
        defects(&built.bytes),
        [(CarveoutNameDereference, built.table_at + field + 6)]
    );
    assert!(!accepted(&built.bytes));
    let text = report::render("fw.elf", &check(&built.bytes, &Options::linux()));
    assert!(text.contains("carveout-name-dereference [linux]"), "{text}");
    assert!(text.contains("the conversion \"%s\""), "{text}");
    // %d prints an unspecified number: loaded, advice
    let built = image(&named(b"shared%d"), &Layout::default()).unwrap();
    assert_eq!(
        defects(&built.bytes),
        [(CarveoutNameFormat, built.table_at + field + 6)]
    );
    assert!(accepted(&built.bytes));
    // %% and %-% print one %: "a%%b" and "a%-%b" are both registered as "a%b"
    let mut table = named(b"a%%b");
    let second = CARVEOUT_ANY + 4 + Region::NAME;
    table[second..second + 32].fill(0);
    table[second..second + 5].copy_from_slice(b"a%-%b");
    let built = image(&table, &Layout::default()).unwrap();
    let found = defects(&built.bytes);
    assert!(
        found.contains(&(DuplicateCarveoutName, built.table_at + second as u64)),
        "{found:?}"
    );
    assert!(!accepted(&built.bytes));
    // and a plain name is no format at all
    let built = image(&named(b"a%%b"), &Layout::default()).unwrap();
    assert_eq!(defects(&built.bytes), []);
}

#[test]
fn a_table_section_without_file_contents_is_still_read_as_linux_reads_it() {
    let mut table = sample_table();
    put(&mut table, 0, 2);
    let built = image(&table, &Layout::default()).unwrap();
    let mut bytes = built.bytes;
    let at = shdr(&bytes, &ELF32, TABLE_SECTION_INDEX);
    put(&mut bytes, at + ELF32.sh_type, object::elf::SHT_NOBITS);
    assert_eq!(
        defects(&bytes),
        [(TableNotInFile, at as u64), (BadVersion, built.table_at)]
    );
    assert!(!accepted(&bytes));
}

#[test]
fn the_report_names_each_finding_with_its_rule_source_and_offset() {
    let mut table = sample_table();
    put(&mut table, VRING1 + 8, 6);
    put(&mut table, VRING0 + 8, 6);
    put(&mut table, VDEV_BODY + 8, 0);
    let built = image(&table, &Layout::default()).unwrap();
    let text = report::render("fw.elf", &check(&built.bytes, &Options::linux()));
    let at = built.table_at + VRING0 as u64 + 8;
    assert!(
        text.contains(&format!(
            "{at:#08x} vring-num-not-power-of-two [linux-runtime]: entry 2 (vdev) vring0 num is 6"
        )),
        "{text}"
    );
    assert!(
        text.contains("virtio_ring.c:2856-2876 (vring_new_virtqueue))"),
        "{text}"
    );
    assert!(text.contains("missing-ns-feature [qfabric]"), "{text}");
    assert!(text.contains("verdict: accepted"), "{text}");
    let text = report::render("fw.elf", &check(&built.bytes, &strict()));
    assert!(
        text.contains("verdict: refused, 3 defect(s): 0 [linux] (Linux 6.12 does not load and start it), 3 advice (--strict)"),
        "{text}"
    );
}

#[test]
fn every_defect_kind_has_a_unique_name_a_source_and_a_reason() {
    for kind in DefectKind::ALL {
        assert_eq!(DefectKind::from_name(kind.name()), Some(*kind));
        assert!(!kind.why().is_empty());
        let source = kind.source();
        assert!(
            source.starts_with("qfabric advice") || source.contains(".c:") || source.contains(".h"),
            "{kind}: {source}"
        );
        assert_eq!(
            source.starts_with("qfabric advice"),
            kind.rule() == Rule::Qfabric,
            "{kind}"
        );
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
    // the tests above: no table, big-endian, the name formats
    seen.extend([
        NoResourceTable,
        BigEndian,
        CarveoutNameDereference,
        CarveoutNameFormat,
    ]);
    let missing: Vec<&DefectKind> = DefectKind::ALL
        .iter()
        .filter(|kind| !seen.contains(kind))
        .collect();
    assert!(missing.is_empty(), "kinds no test produces: {missing:?}");
}

#[test]
fn the_documentation_lists_every_rule_with_its_source() {
    let doc = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/firmware-check.md"
    ))
    .unwrap();
    for kind in DefectKind::ALL {
        let row = format!(
            "| `{}` | {} | {} |",
            kind.name(),
            kind.rule(),
            kind.source()
        );
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
    let report = check(&built.bytes, &Options::linux()).expect("accepted");
    assert!(report.warnings.is_empty(), "{:?}", report.warnings);
    assert_eq!(report.elf.unwrap().table.unwrap().offset, built.table_at);
    // .rodata (section 2, before the table's section 3) renamed .resource_table
    let table_name = get(
        &built.bytes,
        shdr(&built.bytes, &ELF32, TABLE_SECTION_INDEX),
    );
    let rodata_header = shdr(&built.bytes, &ELF32, 2);
    put(&mut built.bytes, rodata_header, table_name as u32);
    let report = check(&built.bytes, &Options::linux()).expect("the first is valid");
    assert_eq!(report.warnings.len(), 1, "{:?}", report.warnings);
    assert!(report.warnings[0]
        .text
        .starts_with("2 sections are named .resource_table"));
    assert_eq!(report.elf.unwrap().table.unwrap().offset, built.rodata_at);
}
