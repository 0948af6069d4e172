//! The ELF side of the check, read the way Linux 6.12's remoteproc ELF loader reads an image
//! (`drivers/remoteproc/remoteproc_elf_loader.c`): `rproc_elf_sanity_check` (the header),
//! `find_table` (the `.resource_table` section), `rproc_elf_load_segments` (PT_LOAD segments).
//!
//! Linux reads the raw header fields: `e_phnum`, `e_shnum` and `e_shstrndx` as they are (no ELF
//! extended numbering), header tables at `e_phoff`/`e_shoff` with the class's structure size
//! (whatever `e_phentsize`/`e_shentsize` say), section names from the file bytes at the name
//! table's `sh_offset` (whatever its `sh_size` says), and none of these reads is bounded by the
//! file except where the loader checks. So this module reads field by field at the offsets
//! Linux computes, with the `object` crate's structure layouts, instead of the `object` crate's
//! validating reader: a read Linux makes past the end of the file is a [`DefectKind::ReadPastEnd`],
//! and what the `object` crate would refuse but Linux does not look at is qfabric's advice
//! ([`DefectKind::MalformedElf`]).

use object::elf::{
    ELFCLASS32, ELFCLASS64, ELFDATA2LSB, ELFMAG, EV_CURRENT, PT_LOAD, SHF_ALLOC, SHF_WRITE,
    SHT_NOBITS, SHT_PROGBITS,
};
use object::read::elf::{FileHeader, ProgramHeader, SectionHeader};
use object::{LittleEndian, Pod};

use crate::defect::{Defect, DefectKind};

/// The name Linux looks the table up by, with the NUL `strcmp` compares.
pub const TABLE_SECTION: &[u8] = b".resource_table";

/// One PT_LOAD program header that Linux loads (`p_memsz` not 0).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Segment {
    /// Index among all program headers.
    pub index: usize,
    /// File offset of the program header itself.
    pub header_at: u64,
    pub offset: u64,
    pub vaddr: u64,
    /// Where Linux loads it (`rproc_elf_load_segments` uses `p_paddr` as the device address).
    pub paddr: u64,
    pub filesz: u64,
    pub memsz: u64,
    pub flags: u32,
}

/// Whether `[start, start + len)` holds `[inner, inner + inner_len)`, without overflow.
pub fn contains(start: u64, len: u64, inner: u64, inner_len: u64) -> bool {
    let (Some(end), Some(inner_end)) = (start.checked_add(len), inner.checked_add(inner_len))
    else {
        return false;
    };
    start <= inner && inner_end <= end
}

/// The `.resource_table` section Linux uses (the first one of that name).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableSection {
    /// File offset of the section header.
    pub header_at: u64,
    pub offset: u64,
    pub size: u64,
    pub addr: u64,
    pub sh_type: u32,
}

/// A read-only allocated section with file contents: where the name heuristic looks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadOnlySection {
    pub name: String,
    pub offset: u64,
    pub size: u64,
}

/// What the ELF checks learned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ElfInfo {
    pub is_64: bool,
    pub machine: u16,
    pub entry: u64,
    /// `e_phnum` and `e_shnum` as Linux reads them.
    pub program_headers: usize,
    pub sections: usize,
    /// The PT_LOAD segments Linux loads (`p_memsz` not 0), as far as Linux could read them.
    pub segments: Vec<Segment>,
    /// The table's section, when `find_table` finds one whose bytes lie in the file.
    pub table: Option<TableSection>,
    /// Sections named `.resource_table` (Linux uses the first).
    pub table_sections: usize,
    pub read_only: Vec<ReadOnlySection>,
}

/// Applies Linux's ELF rules. Returns `None` when `rproc_elf_sanity_check` refuses the header
/// (Linux goes no further); segment and table-section defects are recorded and the ELF's
/// description is still returned (without a table section when Linux finds none to read).
pub fn read(image: &[u8], defects: &mut Vec<Defect>) -> Option<ElfInfo> {
    // rproc_elf_sanity_check, in its order.
    if image.len() < 52 {
        defects.push(Defect::new(
            DefectKind::ElfTooSmall,
            0,
            format!("{} bytes, an ELF32 header needs 52", image.len()),
        ));
        return None;
    }
    if image[..4] != ELFMAG {
        defects.push(Defect::new(
            DefectKind::BadMagic,
            0,
            format!("starts with {:02x?}, not 7f 45 4c 46", &image[..4]),
        ));
        return None;
    }
    let class = image[4];
    if class != ELFCLASS32 && class != ELFCLASS64 {
        defects.push(Defect::new(
            DefectKind::UnsupportedClass,
            4,
            format!("EI_CLASS is {class}"),
        ));
        return None;
    }
    if class == ELFCLASS64 && image.len() < 64 {
        defects.push(Defect::new(
            DefectKind::ElfTooSmall,
            0,
            format!("{} bytes, an ELF64 header needs 64", image.len()),
        ));
        return None;
    }
    if image[5] != ELFDATA2LSB {
        defects.push(Defect::new(
            DefectKind::BigEndian,
            5,
            format!(
                "EI_DATA is {} (2 = big-endian), not 1 (little-endian)",
                image[5]
            ),
        ));
        return None;
    }
    if class == ELFCLASS32 {
        read_class::<object::elf::FileHeader32<LittleEndian>>(image, defects, &FIELDS_32)
    } else {
        read_class::<object::elf::FileHeader64<LittleEndian>>(image, defects, &FIELDS_64)
    }
}

/// Offsets of the header fields a defect may point at, and how many bytes of each header
/// structure Linux reads (the fields up to the last one it uses).
struct Fields {
    e_phoff: u64,
    e_shoff: u64,
    e_phentsize: u64,
    e_phnum: u64,
    e_shentsize: u64,
    e_shnum: u64,
    e_shstrndx: u64,
    /// `rproc_elf_load_segments` reads p_type, p_offset, p_paddr, p_filesz, p_memsz.
    phdr_read: usize,
    /// `find_table` reads sh_name, sh_offset, sh_size (and sh_addr of the table's).
    shdr_read: usize,
    /// ... and only sh_offset of the section-name table's header.
    sh_offset_end: usize,
}

const FIELDS_32: Fields = Fields {
    e_phoff: 0x1c,
    e_shoff: 0x20,
    e_phentsize: 0x2a,
    e_phnum: 0x2c,
    e_shentsize: 0x2e,
    e_shnum: 0x30,
    e_shstrndx: 0x32,
    phdr_read: 24,
    shdr_read: 24,
    sh_offset_end: 20,
};

const FIELDS_64: Fields = Fields {
    e_phoff: 0x20,
    e_shoff: 0x28,
    e_phentsize: 0x36,
    e_phnum: 0x38,
    e_shentsize: 0x3a,
    e_shnum: 0x3c,
    e_shstrndx: 0x3e,
    phdr_read: 48,
    shdr_read: 40,
    sh_offset_end: 32,
};

/// A structure at file offset `at` of which Linux reads the first `read` bytes: `None` when
/// those bytes are not all in the file. Bytes of the structure past the end of the file that
/// Linux does not read are zero.
fn structure<T: Pod>(image: &[u8], at: u64, read: usize) -> Option<T> {
    let start = usize::try_from(at).ok()?;
    if start.checked_add(read)? > image.len() {
        return None;
    }
    let size = std::mem::size_of::<T>();
    let mut bytes = vec![0u8; size];
    let len = size.min(image.len() - start);
    bytes[..len].copy_from_slice(&image[start..start + len]);
    object::pod::from_bytes::<T>(&bytes)
        .ok()
        .map(|(value, _)| *value)
}

/// What `strcmp(name_table + sh_name, ".resource_table")` finds: `Some(true)` for a match,
/// `None` when the comparison runs past the end of the file before it is decided.
fn is_table_name(image: &[u8], at: u64) -> Option<bool> {
    let start = usize::try_from(at).ok()?;
    for (k, &want) in TABLE_SECTION.iter().chain([&0u8]).enumerate() {
        let byte = *image.get(start.checked_add(k)?)?;
        if byte != want {
            return Some(false);
        }
    }
    Some(true)
}

/// A section's name for the report and the channel heuristic: the bytes up to a NUL or the end
/// of the file.
fn section_name(image: &[u8], at: u64) -> &[u8] {
    let rest = usize::try_from(at)
        .ok()
        .and_then(|start| image.get(start..))
        .unwrap_or_default();
    let end = rest.iter().position(|&b| b == 0).unwrap_or(rest.len());
    &rest[..end]
}

fn read_class<Elf: FileHeader<Endian = LittleEndian>>(
    image: &[u8],
    defects: &mut Vec<Defect>,
    fields: &Fields,
) -> Option<ElfInfo> {
    let endian = LittleEndian;
    let size = image.len() as u64;
    // The sanity checks above guarantee the whole header is in the file.
    let header: Elf = structure(image, 0, std::mem::size_of::<Elf>())?;
    let phdr_size = std::mem::size_of::<Elf::ProgramHeader>() as u64;
    let shdr_size = std::mem::size_of::<Elf::SectionHeader>() as u64;
    let phoff: u64 = header.e_phoff(endian).into();
    let shoff: u64 = header.e_shoff(endian).into();
    let phnum = header.e_phnum(endian);
    let shnum = header.e_shnum(endian);
    malformed(image, &header, fields, phdr_size, shdr_size, defects);

    if shoff.checked_add(shdr_size).is_none_or(|end| end > size) {
        defects.push(Defect::new(
            DefectKind::SectionHeadersPastEnd,
            fields.e_shoff,
            format!("e_shoff {shoff:#x} + {shdr_size} > file size {size:#x}"),
        ));
        return None;
    }
    if phnum == 0 {
        defects.push(Defect::new(
            DefectKind::NoProgramHeaders,
            fields.e_phnum,
            "e_phnum is 0",
        ));
        return None;
    }
    if phoff > size {
        defects.push(Defect::new(
            DefectKind::ProgramHeadersPastEnd,
            fields.e_phoff,
            format!("e_phoff {phoff:#x} > file size {size:#x}"),
        ));
        return None;
    }

    let (table, names_at) = find_table::<Elf>(image, &header, fields, shdr_size, defects);
    let (table_sections, read_only) =
        all_sections::<Elf>(image, shoff, shnum, shdr_size, fields, names_at);
    let segments = load_segments::<Elf>(image, phoff, phnum, phdr_size, fields, defects);
    Some(ElfInfo {
        is_64: Elf::is_type_64_sized(),
        machine: header.e_machine(endian),
        entry: header.e_entry(endian).into(),
        program_headers: usize::from(phnum),
        sections: usize::from(shnum),
        segments,
        table,
        table_sections,
        read_only,
    })
}

/// qfabric's advice about header fields Linux does not look at.
fn malformed<Elf: FileHeader<Endian = LittleEndian>>(
    image: &[u8],
    header: &Elf,
    fields: &Fields,
    phdr_size: u64,
    shdr_size: u64,
    defects: &mut Vec<Defect>,
) {
    let endian = LittleEndian;
    if image[6] != EV_CURRENT {
        defects.push(Defect::new(
            DefectKind::MalformedElf,
            6,
            format!("EI_VERSION is {}, not 1", image[6]),
        ));
    }
    let phentsize = u64::from(header.e_phentsize(endian));
    if phentsize != phdr_size {
        defects.push(Defect::new(
            DefectKind::MalformedElf,
            fields.e_phentsize,
            format!("e_phentsize is {phentsize}, Linux steps by {phdr_size}"),
        ));
    }
    let shentsize = u64::from(header.e_shentsize(endian));
    if shentsize != shdr_size {
        defects.push(Defect::new(
            DefectKind::MalformedElf,
            fields.e_shentsize,
            format!("e_shentsize is {shentsize}, Linux steps by {shdr_size}"),
        ));
    }
    let shnum = header.e_shnum(endian);
    let shstrndx = header.e_shstrndx(endian);
    // e_shnum 0 is extended numbering when section 0 holds the count in sh_size
    let counted_in_section_0 = shnum == 0
        && structure::<Elf::SectionHeader>(image, header.e_shoff(endian).into(), fields.shdr_read)
            .is_some_and(|section| section.sh_size(endian).into() != 0);
    if counted_in_section_0
        || shstrndx == object::elf::SHN_XINDEX
        || header.e_phnum(endian) == object::elf::PN_XNUM
    {
        defects.push(Defect::new(
            DefectKind::MalformedElf,
            fields.e_shnum,
            format!(
                "e_phnum {}, e_shnum {shnum}, e_shstrndx {shstrndx:#x}: ELF extended numbering \
                 (the real counts in section 0), which Linux does not read",
                header.e_phnum(endian)
            ),
        ));
    }
}

/// `find_table`: the first section whose name is `.resource_table`, then its checks that stop
/// Linux from reading a table. Also returns the file offset of the section-name table.
fn find_table<Elf: FileHeader<Endian = LittleEndian>>(
    image: &[u8],
    header: &Elf,
    fields: &Fields,
    shdr_size: u64,
    defects: &mut Vec<Defect>,
) -> (Option<TableSection>, Option<u64>) {
    let endian = LittleEndian;
    let size = image.len() as u64;
    let shoff: u64 = header.e_shoff(endian).into();
    let shnum = header.e_shnum(endian);
    let shstrndx = header.e_shstrndx(endian);
    let names_header_at = shoff.saturating_add(u64::from(shstrndx) * shdr_size);
    let Some(names_header) =
        structure::<Elf::SectionHeader>(image, names_header_at, fields.sh_offset_end)
    else {
        defects.push(Defect::new(
            DefectKind::ReadPastEnd,
            fields.e_shstrndx,
            format!(
                "e_shstrndx {shstrndx:#x}: find_table reads the section-name table's header at \
                 {names_header_at:#x}, past the file's {size:#x} bytes"
            ),
        ));
        return (None, None);
    };
    let names_at: u64 = names_header.sh_offset(endian).into();
    for index in 0..u64::from(shnum) {
        let at = shoff.saturating_add(index * shdr_size);
        let Some(section) = structure::<Elf::SectionHeader>(image, at, fields.shdr_read) else {
            defects.push(Defect::new(
                DefectKind::ReadPastEnd,
                fields.e_shnum,
                format!(
                    "e_shnum {shnum}: find_table reads section header {index} at {at:#x}, past \
                     the file's {size:#x} bytes"
                ),
            ));
            return (None, Some(names_at));
        };
        let name_at = names_at.checked_add(u64::from(section.sh_name(endian)));
        match name_at.and_then(|name_at| is_table_name(image, name_at)) {
            Some(false) => continue,
            Some(true) => {}
            None => {
                defects.push(Defect::new(
                    DefectKind::ReadPastEnd,
                    at,
                    format!(
                        "section {index}: find_table compares its name at section-name table \
                         {names_at:#x} + sh_name {:#x}, past the file's {size:#x} bytes",
                        section.sh_name(endian)
                    ),
                ));
                return (None, Some(names_at));
            }
        }
        let table = TableSection {
            header_at: at,
            offset: section.sh_offset(endian).into(),
            size: section.sh_size(endian).into(),
            addr: section.sh_addr(endian).into(),
            sh_type: section.sh_type(endian),
        };
        if table
            .offset
            .checked_add(table.size)
            .is_none_or(|end| end > size)
        {
            defects.push(Defect::new(
                DefectKind::TablePastEnd,
                table.header_at,
                format!(
                    "sh_offset {:#x} + sh_size {:#x} > file size {size:#x}",
                    table.offset, table.size
                ),
            ));
            return (None, Some(names_at));
        }
        if table.sh_type == SHT_NOBITS {
            // Linux does not look at sh_type: it reads the file bytes at sh_offset.
            defects.push(Defect::new(
                DefectKind::TableNotInFile,
                table.header_at,
                "sh_type is SHT_NOBITS: Linux reads the file bytes at sh_offset as the table",
            ));
        }
        return (Some(table), Some(names_at));
    }
    let detail = if shnum == 0 {
        format!(
            "e_shnum is 0, so find_table looks at no section (ELF extended numbering keeps the \
             count in section 0's sh_size, which Linux does not read); e_shoff {shoff:#x}"
        )
    } else {
        format!("none of the {shnum} sections at e_shoff {shoff:#x} is named .resource_table")
    };
    defects.push(Defect::new(
        DefectKind::NoResourceTable,
        fields.e_shoff,
        detail,
    ));
    (None, Some(names_at))
}

/// Every section header in the file (Linux stops at the table's; the report and the channel
/// heuristic look at all): how many are named `.resource_table`, and the read-only data.
fn all_sections<Elf: FileHeader<Endian = LittleEndian>>(
    image: &[u8],
    shoff: u64,
    shnum: u16,
    shdr_size: u64,
    fields: &Fields,
    names_at: Option<u64>,
) -> (usize, Vec<ReadOnlySection>) {
    let endian = LittleEndian;
    let size = image.len() as u64;
    let mut table_sections = 0;
    let mut read_only = Vec::new();
    for index in 0..u64::from(shnum) {
        let at = shoff.saturating_add(index * shdr_size);
        let Some(section) = structure::<Elf::SectionHeader>(image, at, fields.shdr_read) else {
            break;
        };
        let name = names_at
            .and_then(|names| names.checked_add(u64::from(section.sh_name(endian))))
            .map(|name_at| section_name(image, name_at))
            .unwrap_or_default();
        if name == TABLE_SECTION {
            table_sections += 1;
        }
        let offset: u64 = section.sh_offset(endian).into();
        let sh_size: u64 = section.sh_size(endian).into();
        let flags: u64 = section.sh_flags(endian).into();
        let in_file = offset.checked_add(sh_size).is_some_and(|end| end <= size);
        if section.sh_type(endian) == SHT_PROGBITS
            && flags & u64::from(SHF_ALLOC) != 0
            && flags & u64::from(SHF_WRITE) == 0
            && in_file
        {
            read_only.push(ReadOnlySection {
                name: String::from_utf8_lossy(name).into_owned(),
                offset,
                size: sh_size,
            });
        }
    }
    (table_sections, read_only)
}

/// `rproc_elf_load_segments`: all `e_phnum` program headers at `e_phoff`, each read before its
/// type is looked at; PT_LOAD segments with `p_memsz` 0 are skipped.
fn load_segments<Elf: FileHeader<Endian = LittleEndian>>(
    image: &[u8],
    phoff: u64,
    phnum: u16,
    phdr_size: u64,
    fields: &Fields,
    defects: &mut Vec<Defect>,
) -> Vec<Segment> {
    let endian = LittleEndian;
    let size = image.len() as u64;
    let mut segments = Vec::new();
    for index in 0..usize::from(phnum) {
        let header_at = phoff.saturating_add(index as u64 * phdr_size);
        let Some(ph) = structure::<Elf::ProgramHeader>(image, header_at, fields.phdr_read) else {
            defects.push(Defect::new(
                DefectKind::ReadPastEnd,
                fields.e_phnum,
                format!(
                    "e_phnum {phnum}: rproc_elf_load_segments reads program header {index} at \
                     {header_at:#x}, past the file's {size:#x} bytes"
                ),
            ));
            break;
        };
        let segment = Segment {
            index,
            header_at,
            offset: ph.p_offset(endian).into(),
            vaddr: ph.p_vaddr(endian).into(),
            paddr: ph.p_paddr(endian).into(),
            filesz: ph.p_filesz(endian).into(),
            memsz: ph.p_memsz(endian).into(),
            flags: ph.p_flags(endian),
        };
        if ph.p_type(endian) != PT_LOAD || segment.memsz == 0 {
            continue;
        }
        if segment.filesz > segment.memsz {
            defects.push(Defect::new(
                DefectKind::SegmentFileszOverMemsz,
                segment.header_at,
                format!(
                    "program header {index}: p_filesz {:#x} > p_memsz {:#x}",
                    segment.filesz, segment.memsz
                ),
            ));
        } else if segment
            .offset
            .checked_add(segment.filesz)
            .is_none_or(|end| end > size)
        {
            defects.push(Defect::new(
                DefectKind::SegmentPastEnd,
                segment.header_at,
                format!(
                    "program header {index}: p_offset {:#x} + p_filesz {:#x} > file size {size:#x}",
                    segment.offset, segment.filesz
                ),
            ));
        }
        segments.push(segment);
    }
    segments
}

/// Checks that some PT_LOAD segment puts the table's bytes at `sh_addr`, where
/// `rproc_elf_find_loaded_rsc_table` looks for the loaded table.
pub fn check_table_loaded(elf: &ElfInfo, table: &TableSection, defects: &mut Vec<Defect>) {
    let loaded = elf.segments.iter().any(|segment| {
        contains(segment.paddr, segment.filesz, table.addr, table.size)
            && segment.offset.checked_add(table.addr - segment.paddr) == Some(table.offset)
    });
    if !loaded {
        defects.push(Defect::new(
            DefectKind::TableNotLoaded,
            table.header_at,
            format!(
                "sh_addr {:#x} (file {:#x}, {} bytes) is not where any PT_LOAD segment loads \
                 those bytes",
                table.addr, table.offset, table.size
            ),
        ));
    }
}

/// A short name for `e_machine`.
pub fn machine_name(machine: u16) -> &'static str {
    match machine {
        object::elf::EM_ARM => "ARM",
        object::elf::EM_AARCH64 => "AArch64",
        object::elf::EM_RISCV => "RISC-V",
        object::elf::EM_386 => "x86",
        object::elf::EM_X86_64 => "x86-64",
        object::elf::EM_XTENSA => "Xtensa",
        _ => "other",
    }
}
