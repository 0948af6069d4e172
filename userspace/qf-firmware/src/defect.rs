//! What `qf firmware check` can find wrong, each finding named, placed at a file offset, and
//! marked with whose rule it is and what follows: Linux 6.12's remoteproc core refuses the image
//! ([`Rule::Linux`]), Linux loads and starts it but a later step fails ([`Rule::LinuxRuntime`]),
//! or qfabric's own advice ([`Rule::Qfabric`]). Only the first decides the verdict unless
//! `--strict` is given.

use std::fmt;

/// Whose rule a finding breaks, and whether Linux refuses the image for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// Linux 6.12's remoteproc core does not load and start the image (or its outcome is not
    /// defined by the file: a read past its end, a format string that dereferences).
    Linux,
    /// Linux loads and starts the image; a later step (a virtio or rpmsg probe) fails.
    LinuxRuntime,
    /// qfabric's advice: Linux loads and starts the image, but it is very likely broken.
    Qfabric,
}

impl Rule {
    /// Whether a finding of this rule refuses the image without `--strict`.
    pub fn refuses(self) -> bool {
        self == Rule::Linux
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Rule::Linux => "linux",
            Rule::LinuxRuntime => "linux-runtime",
            Rule::Qfabric => "qfabric",
        })
    }
}

macro_rules! defect_kinds {
    ($($kind:ident = $name:literal, $rule:ident, $source:literal, $why:literal;)*) => {
        /// Every finding the checker knows, named as the command line prints it.
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

            /// The Linux 6.12 source the rule follows, as `file:line (function)` (lines of
            /// Debian's linux-source-6.12, 6.12.95), or "qfabric advice".
            pub fn source(self) -> &'static str {
                match self {
                    $(DefectKind::$kind => $source,)*
                }
            }

            /// What Linux does with such an image, or why qfabric advises against it.
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
        "remoteproc_elf_loader.c:57,75 (rproc_elf_sanity_check)",
        "\"Image is too small\" / \"elf64 header is too small\" (shorter than the ELF header)";
    BadMagic = "bad-magic", Linux,
        "remoteproc_elf_loader.c:64 (rproc_elf_sanity_check)",
        "\"Image is corrupted (bad magic)\"";
    UnsupportedClass = "unsupported-class", Linux,
        "remoteproc_elf_loader.c:70 (rproc_elf_sanity_check)",
        "\"Unsupported class\" (neither ELFCLASS32 nor ELFCLASS64)";
    BigEndian = "big-endian", Linux,
        "remoteproc_elf_loader.c:81-87 (rproc_elf_sanity_check)",
        "\"Unsupported firmware endianness\" (the firmware must match the little-endian Linux \
         host; this checker refuses every big-endian image)";
    SectionHeadersPastEnd = "section-headers-past-end", Linux,
        "remoteproc_elf_loader.c:95 (rproc_elf_sanity_check)",
        "\"Image is too small\" (e_shoff + one section header > file size)";
    NoProgramHeaders = "no-program-headers", Linux,
        "remoteproc_elf_loader.c:100 (rproc_elf_sanity_check)",
        "\"No loadable segments\" (e_phnum is 0)";
    ProgramHeadersPastEnd = "program-headers-past-end", Linux,
        "remoteproc_elf_loader.c:105 (rproc_elf_sanity_check)",
        "\"Firmware size is too small\" (e_phoff > file size)";
    ReadPastEnd = "read-past-end", Linux,
        "remoteproc_elf_loader.c:171-180 (rproc_elf_load_segments), 258-275 (find_table)",
        "Linux reads a program header, a section header, the section-name table's header or a \
         section name past the end of the image, unchecked (e_phnum, e_shnum and e_shstrndx \
         are used as they are, without ELF extended numbering): what it finds there is not in \
         the file, so the load is undefined (garbage, no table, or an oops); refused";
    MalformedElf = "malformed-elf", Qfabric,
        "qfabric advice",
        "EI_VERSION is not 1, e_phentsize or e_shentsize is not the class's header size, or \
         the header uses ELF extended numbering: Linux looks at none of these (it steps by the \
         class's header size and reads the counts as they are), other ELF tools do";
    SegmentFileszOverMemsz = "segment-filesz-over-memsz", Linux,
        "remoteproc_elf_loader.c:190 (rproc_elf_load_segments)",
        "\"bad phdr filesz ... memsz\" (a PT_LOAD with p_memsz 0 is skipped at line 184)";
    SegmentPastEnd = "segment-past-end", Linux,
        "remoteproc_elf_loader.c:197 (rproc_elf_load_segments)",
        "\"truncated fw: need ... avail\" (p_offset + p_filesz > file size)";
    NoResourceTable = "no-resource-table", Linux,
        "remoteproc_elf_loader.c:270-276,313 (find_table), 336-338 (rproc_elf_load_rsc_table)",
        "no section named \".resource_table\" among the e_shnum headers: -EINVAL (some \
         platform drivers, e.g. stm32_rproc, only warn and boot without rpmsg)";
    TablePastEnd = "table-past-end", Linux,
        "remoteproc_elf_loader.c:281 (find_table)",
        "\"resource table truncated\" (sh_offset + sh_size > file size)";
    TableNotInFile = "table-not-in-file", Qfabric,
        "qfabric advice",
        "the .resource_table section is SHT_NOBITS: Linux does not look at sh_type and reads \
         the file bytes at sh_offset as the table (checked here as Linux reads them)";
    TableHeaderless = "table-headerless", Linux,
        "remoteproc_elf_loader.c:287 (find_table)",
        "\"header-less resource table\" (section smaller than the 16-byte header)";
    BadVersion = "bad-version", Linux,
        "remoteproc_elf_loader.c:293 (find_table)",
        "\"unsupported fw ver\" (ver must be 1)";
    ReservedNotZero = "reserved-not-zero", Linux,
        "remoteproc_elf_loader.c:299 (find_table); remoteproc_core.c:837 (rproc_handle_carveout), 638 (_devmem), 560 (_trace), 494 (_vdev)",
        "\"non zero reserved bytes\"";
    OffsetsPastEnd = "offsets-past-end", Linux,
        "remoteproc_elf_loader.c:305 (find_table)",
        "\"resource table incomplete\" (16 + 4 * num > section size)";
    TableNotLoaded = "table-not-loaded", Qfabric,
        "qfabric advice",
        "no PT_LOAD segment loads the table's bytes at its sh_addr, where \
         rproc_elf_find_loaded_rsc_table looks for it (unless a carve-out or the platform's \
         da_to_va maps it): Linux then starts the firmware without writing the vring \
         addresses, notify ids and features into the firmware's table";
    EntryPastEnd = "entry-past-end", Linux,
        "remoteproc_core.c:1033-1039 (rproc_handle_resources)",
        "\"rsc table is truncated\" (an offset leaves no room for the 4-byte entry header)";
    EntryTruncated = "entry-truncated", Linux,
        "remoteproc_core.c:831 (rproc_handle_carveout), 632 (_devmem), 554 (_trace), 487-488 (_vdev)",
        "\"... rsc is truncated\" (the entry, with a vdev's vrings and config space, runs past \
         the end of the section)";
    DuplicateCarveoutName = "duplicate-carveout-name", Linux,
        "remoteproc_core.c:849-856 (rproc_handle_carveout), 263-268 (rproc_find_carveout_by_name)",
        "\"Carveout already associated to resource table\", -ENOMEM (carve-outs are looked up \
         by the name vsnprintf makes of the name field, 31 bytes at most)";
    CarveoutNameDereference = "carveout-name-dereference", Linux,
        "remoteproc_core.c:849 -> 263 (rproc_find_carveout_by_name), 869-871 -> 939 (rproc_mem_entry_init); lib/vsprintf.c:2803,2807 (vsnprintf)",
        "a defect of Linux 6.12: the carve-out's name is passed to vsnprintf as the format \
         string, with no arguments; a %s or %p<ext> conversion makes it dereference whatever \
         va_arg returns (an oops, or a name read from arbitrary kernel memory). Linux does not \
         refuse the image, but whether it loads is not decided by the file: refused";
    CarveoutNameFormat = "carveout-name-format", LinuxRuntime,
        "remoteproc_core.c:849 -> 263, 869-871 -> 939; lib/vsprintf.c:2510-2667 (format_decode)",
        "a defect of Linux 6.12: the carve-out's name is a format string. A conversion that \
         takes a number (%d, %x, %c, %*...) or plain %p prints an unspecified value into the \
         name Linux registers; %n or an unknown conversion gives a WARN_ONCE backtrace and \
         ends the name there. Linux loads the image; the registered name is not the one in \
         the file";
    EntriesOverlap = "entries-overlap", Qfabric,
        "qfabric advice",
        "two entries, or an entry and the table header, share bytes; Linux does not check, and \
         writes vring addresses and features into whichever entry comes last";
    UnknownType = "unknown-type", Qfabric,
        "qfabric advice (remoteproc_core.c:1058-1061 skips it)",
        "rproc_handle_resources skips the entry (\"unsupported resource\"): whatever the firmware \
         expects from it never happens";
    TooManyVrings = "too-many-vrings", Linux,
        "remoteproc_core.c:503 (rproc_handle_vdev)",
        "\"too many vrings\" (more than 2)";
    VringZero = "vring-zero", LinuxRuntime,
        "remoteproc_core.c:398 (rproc_parse_vring) from remoteproc_virtio.c:533-536 (rproc_virtio_probe)",
        "\"invalid qsz or alignment\" (num or align is 0): the rproc-virtio device's probe fails, \
         but rproc_handle_vdev only checks that the device was registered \
         (remoteproc_core.c:519-524), so Linux starts the firmware without that virtio device";
    VringNumNotPowerOfTwo = "vring-num-not-power-of-two", LinuxRuntime,
        "include/linux/remoteproc.h (fw_rsc_vdev_vring: num \"must be power of two\"); drivers/virtio/virtio_ring.c:2856-2876 (vring_new_virtqueue)",
        "vring_new_virtqueue, which rp_find_vq uses, does not check (only the allocating path \
         does, virtio_ring.c:1101 \"Bad virtqueue length\"); virtio_ring indexes the ring with \
         num - 1 as a mask, so Linux and the firmware disagree on the ring's slots";
    VringAlignNotPowerOfTwo = "vring-align-not-power-of-two", Qfabric,
        "qfabric advice",
        "vring_init places the used ring with a power-of-two mask; any other alignment gives \
         Linux and the firmware two different ring layouts";
    NoRpmsgVdev = "no-rpmsg-vdev", Qfabric,
        "qfabric advice",
        "no vdev entry with id 7 (VIRTIO_ID_RPMSG): Linux creates no rpmsg bus for the firmware, \
         so /dev/qfabricN never appears";
    RpmsgVringCount = "rpmsg-vring-count", LinuxRuntime,
        "drivers/rpmsg/virtio_rpmsg_bus.c:896 (rpmsg_probe); remoteproc_virtio.c:126-129 (rp_find_vq)",
        "rpmsg_probe asks for 2 virtqueues; for a vring the vdev does not declare rp_find_vq \
         finds no vdevNvringM carve-out (-ENOMEM), or, where the platform declares one in its \
         device tree (stm32_rproc), builds a ring of 0 entries: no rpmsg bus";
    VringsAsymmetric = "vrings-asymmetric", Qfabric,
        "qfabric advice (drivers/rpmsg/virtio_rpmsg_bus.c:904 WARN_ON)",
        "rpmsg_probe: WARN_ON(rx vring size != tx vring size) with a kernel backtrace, and the \
         buffer count follows the rx vring only";
    MissingNsFeature = "missing-ns-feature", Qfabric,
        "qfabric advice (drivers/rpmsg/virtio_rpmsg_bus.c:959)",
        "dfeatures lacks VIRTIO_RPMSG_F_NS (bit 0): rpmsg creates no name-service endpoint, the \
         firmware's channel announcement is dropped and qfabric's driver never binds";
    CarveoutOutsideImage = "carveout-outside-image", Qfabric,
        "qfabric advice",
        "a carve-out with a fixed device address lies neither inside the ELF's loadable memory \
         (a PT_LOAD's p_paddr .. + p_memsz) nor inside a devmem entry: memory the firmware was \
         not linked for (Linux allocates it anyway, remoteproc_core.c:705-715)";
    TraceOutsideImage = "trace-outside-image", Qfabric,
        "qfabric advice (remoteproc_debugfs.c:135-138, rproc_da_to_va remoteproc_core.c:194-230)",
        "the trace buffer lies neither in the ELF's loadable memory nor in a carve-out with a \
         fixed address; Linux's trace0 reads it through rproc_da_to_va and prints \"Trace ... \
         not available\" unless the platform's da_to_va maps it";
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
            "{:#08x} {} [{}]: {} -- {} ({})",
            self.at,
            self.kind,
            self.kind.rule(),
            self.detail,
            self.kind.why(),
            self.kind.source()
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
