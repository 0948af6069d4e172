//! What `qf firmware check` can find wrong, each defect named, placed at a file offset, and
//! marked with whose rule it breaks: Linux's (remoteproc or rpmsg refuses or breaks) or
//! qfabric's own advice (Linux accepts the image, but the board will not work as intended).

use std::fmt;

/// Whose rule a defect breaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// Linux's remoteproc core, its ELF loader, virtio or the rpmsg bus refuse or misbehave.
    Linux,
    /// qfabric's advice: Linux would load the image, but it is very likely broken.
    Qfabric,
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Rule::Linux => "linux",
            Rule::Qfabric => "qfabric",
        })
    }
}

macro_rules! defect_kinds {
    ($($kind:ident = $name:literal, $rule:ident, $why:literal;)*) => {
        /// Every defect the checker knows, named as the command line prints it.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum DefectKind {
            $($kind,)*
        }

        impl DefectKind {
            /// All kinds, in the order the documentation lists them.
            pub const ALL: &'static [DefectKind] = &[$(DefectKind::$kind,)*];

            /// The kebab-case name printed and accepted by `--allow`.
            pub fn name(self) -> &'static str {
                match self {
                    $(DefectKind::$kind => $name,)*
                }
            }

            /// Whose rule it is.
            pub fn rule(self) -> Rule {
                match self {
                    $(DefectKind::$kind => Rule::$rule,)*
                }
            }

            /// What Linux does with such an image (and where), or why qfabric advises against it.
            pub fn why(self) -> &'static str {
                match self {
                    $(DefectKind::$kind => $why,)*
                }
            }

            /// The kind with this name.
            pub fn from_name(name: &str) -> Option<DefectKind> {
                DefectKind::ALL.iter().copied().find(|kind| kind.name() == name)
            }
        }
    };
}

defect_kinds! {
    ElfTooSmall = "elf-too-small", Linux,
        "rproc_elf_sanity_check: \"Image is too small\" (shorter than the ELF header)";
    BadMagic = "bad-magic", Linux,
        "rproc_elf_sanity_check: \"Image is corrupted (bad magic)\"";
    UnsupportedClass = "unsupported-class", Linux,
        "rproc_elf_sanity_check: \"Unsupported class\" (neither ELFCLASS32 nor ELFCLASS64)";
    BigEndian = "big-endian", Linux,
        "rproc_elf_sanity_check: \"Unsupported firmware endianness\" (the firmware must match the \
         little-endian Linux host; this checker refuses every big-endian image)";
    SectionHeadersPastEnd = "section-headers-past-end", Linux,
        "rproc_elf_sanity_check: \"Image is too small\" (e_shoff + one section header > file size)";
    NoProgramHeaders = "no-program-headers", Linux,
        "rproc_elf_sanity_check: \"No loadable segments\" (e_phnum is 0)";
    ProgramHeadersPastEnd = "program-headers-past-end", Linux,
        "rproc_elf_sanity_check: \"Firmware size is too small\" (e_phoff > file size)";
    MalformedElf = "malformed-elf", Qfabric,
        "the ELF cannot be read: EI_VERSION is not 1, or the program or section header table \
         does not fit the file or has the wrong entry size (Linux checks only e_phoff and one \
         section header, then reads the tables unchecked, past the image)";
    SegmentFileszOverMemsz = "segment-filesz-over-memsz", Linux,
        "rproc_elf_load_segments: \"bad phdr filesz ... memsz\"";
    SegmentPastEnd = "segment-past-end", Linux,
        "rproc_elf_load_segments: \"truncated fw: need ... avail\" (p_offset + p_filesz > file size)";
    NoResourceTable = "no-resource-table", Linux,
        "rproc_elf_load_rsc_table: no \".resource_table\" section, -EINVAL (some platform drivers, \
         e.g. stm32_rproc, only warn and boot without rpmsg)";
    TablePastEnd = "table-past-end", Linux,
        "find_table: \"resource table truncated\" (sh_offset + sh_size > file size)";
    TableNotInFile = "table-not-in-file", Qfabric,
        "the .resource_table section is SHT_NOBITS: Linux would read whatever bytes follow \
         sh_offset in the file as the table";
    TableHeaderless = "table-headerless", Linux,
        "find_table: \"header-less resource table\" (section smaller than the 16-byte header)";
    BadVersion = "bad-version", Linux,
        "find_table: \"unsupported fw ver\" (ver must be 1)";
    ReservedNotZero = "reserved-not-zero", Linux,
        "find_table / rproc_handle_carveout / _devmem / _trace / _vdev: \"non zero reserved bytes\"";
    OffsetsPastEnd = "offsets-past-end", Linux,
        "find_table: \"resource table incomplete\" (16 + 4 * num > section size)";
    TableNotLoaded = "table-not-loaded", Qfabric,
        "no PT_LOAD segment loads the table's bytes at its sh_addr, where \
         rproc_elf_find_loaded_rsc_table looks for it: Linux then starts the firmware without \
         writing the vring addresses, notify ids and features into the firmware's table";
    EntryPastEnd = "entry-past-end", Linux,
        "rproc_handle_resources: \"rsc table is truncated\" (an offset leaves no room for the \
         4-byte entry header)";
    EntryTruncated = "entry-truncated", Linux,
        "rproc_handle_carveout / _devmem / _trace / _vdev: \"... rsc is truncated\" (the entry, \
         with a vdev's vrings and config space, runs past the end of the section)";
    DuplicateCarveoutName = "duplicate-carveout-name", Linux,
        "rproc_handle_carveout: \"Carveout already associated to resource table\", -ENOMEM (it \
         looks carve-outs up by name, compared on their first 31 bytes)";
    EntriesOverlap = "entries-overlap", Qfabric,
        "two entries, or an entry and the table header, share bytes; Linux does not check, and \
         writes vring addresses and features into whichever entry comes last";
    UnknownType = "unknown-type", Qfabric,
        "rproc_handle_resources skips the entry (\"unsupported resource\"): whatever the firmware \
         expects from it never happens";
    TooManyVrings = "too-many-vrings", Linux,
        "rproc_handle_vdev: \"too many vrings\" (more than 2)";
    VringZero = "vring-zero", Linux,
        "rproc_parse_vring: \"invalid qsz or alignment\" (num or align is 0)";
    VringNumNotPowerOfTwo = "vring-num-not-power-of-two", Linux,
        "remoteproc.h: num \"must be power of two\"; virtio_ring indexes the ring with num - 1 \
         as a mask (older kernels refuse it in vring_new_virtqueue: \"Bad virtqueue length\")";
    VringAlignNotPowerOfTwo = "vring-align-not-power-of-two", Qfabric,
        "vring_init places the used ring with a power-of-two mask; any other alignment gives \
         Linux and the firmware two different ring layouts";
    NoRpmsgVdev = "no-rpmsg-vdev", Qfabric,
        "no vdev entry with id 7 (VIRTIO_ID_RPMSG): Linux creates no rpmsg bus for the firmware, \
         so /dev/qfabricN never appears";
    RpmsgVringCount = "rpmsg-vring-count", Linux,
        "virtio_rpmsg_bus's rpmsg_probe asks for 2 virtqueues; for a vring the vdev does not \
         declare rp_find_vq finds no vdevNvringM carve-out (-ENOMEM), or, where the platform \
         declares one in its device tree (stm32_rproc), builds a ring of 0 entries";
    VringsAsymmetric = "vrings-asymmetric", Qfabric,
        "rpmsg_probe: WARN_ON(rx vring size != tx vring size) with a kernel backtrace, and the \
         buffer count follows the rx vring only";
    MissingNsFeature = "missing-ns-feature", Qfabric,
        "dfeatures lacks VIRTIO_RPMSG_F_NS (bit 0): rpmsg creates no name-service endpoint, the \
         firmware's channel announcement is dropped and qfabric's driver never binds";
    CarveoutOutsideImage = "carveout-outside-image", Qfabric,
        "a carve-out with a fixed device address lies neither inside the ELF's loadable memory \
         (a PT_LOAD's p_paddr .. + p_memsz) nor inside a devmem entry: memory the firmware was \
         not linked for";
    TraceOutsideImage = "trace-outside-image", Qfabric,
        "the trace buffer lies outside the ELF's loadable memory; Linux's trace0 reads it through \
         rproc_da_to_va and prints \"Trace ... not available\" when that fails";
}

impl fmt::Display for DefectKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One defect: what, where (a byte offset in the checked file), and the values involved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Defect {
    pub kind: DefectKind,
    /// Byte offset in the file of the offending field.
    pub at: u64,
    /// The field and its value, e.g. "ver is 2".
    pub detail: String,
}

impl Defect {
    pub fn new(kind: DefectKind, at: u64, detail: impl Into<String>) -> Defect {
        Defect {
            kind,
            at,
            detail: detail.into(),
        }
    }
}

impl fmt::Display for Defect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:#08x} {} [{}]: {} -- {}",
            self.at,
            self.kind,
            self.kind.rule(),
            self.detail,
            self.kind.why()
        )
    }
}

/// Something worth knowing that does not refuse the image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Warning {
    pub at: u64,
    pub text: String,
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#08x} {}", self.at, self.text)
    }
}
