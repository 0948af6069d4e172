//! The ELF side of the check, in the order Linux looks at an image: `rproc_elf_sanity_check`
//! (header), `find_table` (the `.resource_table` section), `rproc_elf_load_segments` (PT_LOAD
//! segments). The `object` crate reads the headers; this module applies Linux's rules to the
//! values and names the file offset of every field it refuses.

use object::elf::{
    ELFCLASS32, ELFCLASS64, ELFDATA2LSB, ELFMAG, PT_LOAD, SHF_ALLOC, SHF_WRITE, SHT_NOBITS,
    SHT_PROGBITS,
};
use object::read::elf::{FileHeader, ProgramHeader, SectionHeader};
use object::LittleEndian;

use crate::defect::{Defect, DefectKind};

/// The name Linux looks the table up by.
pub const TABLE_SECTION: &[u8] = b".resource_table";

/// One PT_LOAD program header.
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

impl Segment {
    /// Whether `[da, da + len)` lies in this segment's memory (`p_paddr .. + p_memsz`).
    pub fn holds(&self, da: u64, len: u64) -> bool {
        contains(self.paddr, self.memsz, da, len)
    }
}

/// Whether `[start, start + len)` holds `[inner, inner + inner_len)`, without overflow.
pub fn contains(start: u64, len: u64, inner: u64, inner_len: u64) -> bool {
    let (Some(end), Some(inner_end)) = (start.checked_add(len), inner.checked_add(inner_len))
    else {
        return false;
    };
    start <= inner && inner_end <= end
}

/// The `.resource_table` section Linux would use (the first one of that name).
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
    pub program_headers: usize,
    pub sections: usize,
    pub segments: Vec<Segment>,
    /// The table's section, when Linux would read a table from it.
    pub table: Option<TableSection>,
    /// Sections named `.resource_table` (Linux uses the first).
    pub table_sections: usize,
    pub read_only: Vec<ReadOnlySection>,
}

/// Applies Linux's ELF rules. Returns `None` when a defect in the headers stops Linux (and this
/// check) from going further; segment and table-section defects are recorded and the ELF's
/// description is still returned (without a table section when there is none to read).
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

/// Offsets of the header fields a defect may point at, and the sizes Linux assumes.
struct Fields {
    e_phoff: u64,
    e_shoff: u64,
    e_phnum: u64,
    shdr_size: u64,
}

const FIELDS_32: Fields = Fields {
    e_phoff: 0x1c,
    e_shoff: 0x20,
    e_phnum: 0x2c,
    shdr_size: 40,
};

const FIELDS_64: Fields = Fields {
    e_phoff: 0x20,
    e_shoff: 0x28,
    e_phnum: 0x38,
    shdr_size: 64,
};

fn read_class<Elf: FileHeader<Endian = LittleEndian>>(
    image: &[u8],
    defects: &mut Vec<Defect>,
    fields: &Fields,
) -> Option<ElfInfo> {
    let endian = LittleEndian;
    let size = image.len() as u64;
    let header = match Elf::parse(image) {
        Ok(header) => header,
        Err(error) => {
            defects.push(Defect::new(
                DefectKind::MalformedElf,
                6,
                format!("ELF header: {error} (EI_VERSION is {})", image[6]),
            ));
            return None;
        }
    };
    let phoff: u64 = header.e_phoff(endian).into();
    let shoff: u64 = header.e_shoff(endian).into();
    let phnum = header.e_phnum(endian);
    if shoff
        .checked_add(fields.shdr_size)
        .is_none_or(|end| end > size)
    {
        defects.push(Defect::new(
            DefectKind::SectionHeadersPastEnd,
            fields.e_shoff,
            format!(
                "e_shoff {shoff:#x} + {} > file size {size:#x}",
                fields.shdr_size
            ),
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

    let program_headers = match header.program_headers(endian, image) {
        Ok(headers) => headers,
        Err(error) => {
            defects.push(Defect::new(
                DefectKind::MalformedElf,
                fields.e_phoff,
                format!("program headers at {phoff:#x}, {phnum} of them: {error}"),
            ));
            return None;
        }
    };
    let phentsize = u64::from(header.e_phentsize(endian));
    let mut segments = Vec::new();
    for (index, ph) in program_headers.iter().enumerate() {
        if ph.p_type(endian) != PT_LOAD {
            continue;
        }
        let segment = Segment {
            index,
            header_at: phoff + index as u64 * phentsize,
            offset: ph.p_offset(endian).into(),
            vaddr: ph.p_vaddr(endian).into(),
            paddr: ph.p_paddr(endian).into(),
            filesz: ph.p_filesz(endian).into(),
            memsz: ph.p_memsz(endian).into(),
            flags: ph.p_flags(endian),
        };
        // rproc_elf_load_segments: each PT_LOAD, stopping at the first bad one; all reported.
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

    let sections = match header.sections(endian, image) {
        Ok(sections) => sections,
        Err(error) => {
            defects.push(Defect::new(
                DefectKind::MalformedElf,
                fields.e_shoff,
                format!("section headers at {shoff:#x}: {error}"),
            ));
            return None;
        }
    };
    let shentsize = u64::from(header.e_shentsize(endian));
    let mut table = None;
    let mut table_sections = 0;
    let mut read_only = Vec::new();
    for (index, section) in sections.iter().enumerate() {
        let name = sections.section_name(endian, section).unwrap_or(b"");
        let offset: u64 = section.sh_offset(endian).into();
        let sh_size: u64 = section.sh_size(endian).into();
        let flags: u64 = section.sh_flags(endian).into();
        let sh_type = section.sh_type(endian);
        if name == TABLE_SECTION {
            table_sections += 1;
        }
        if table.is_none() && name == TABLE_SECTION {
            table = Some(TableSection {
                header_at: shoff + index as u64 * shentsize,
                offset,
                size: sh_size,
                addr: section.sh_addr(endian).into(),
                sh_type,
            });
        }
        let in_file = offset.checked_add(sh_size).is_some_and(|end| end <= size);
        if sh_type == SHT_PROGBITS
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
    let table = usable_table(table, sections.len(), shoff, size, fields, defects);
    Some(ElfInfo {
        is_64: Elf::is_type_64_sized(),
        machine: header.e_machine(endian),
        entry: header.e_entry(endian).into(),
        program_headers: program_headers.len(),
        sections: sections.len(),
        segments,
        table,
        table_sections,
        read_only,
    })
}

/// `find_table`'s checks of the section: present, inside the file, with file contents.
fn usable_table(
    table: Option<TableSection>,
    sections: usize,
    shoff: u64,
    size: u64,
    fields: &Fields,
    defects: &mut Vec<Defect>,
) -> Option<TableSection> {
    let Some(table) = table else {
        defects.push(Defect::new(
            DefectKind::NoResourceTable,
            fields.e_shoff,
            format!(
                "none of the {sections} sections at e_shoff {shoff:#x} is named .resource_table"
            ),
        ));
        return None;
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
        return None;
    }
    if table.sh_type == SHT_NOBITS {
        defects.push(Defect::new(
            DefectKind::TableNotInFile,
            table.header_at,
            "sh_type is SHT_NOBITS",
        ));
        return None;
    }
    Some(table)
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
