//! Small firmware images laid out the way a linker lays out an MCU image, built with the
//! `object` crate's ELF writer: a flash segment (`.text`, `.rodata`, `.resource_table`) and a
//! RAM segment (`.data`, `.bss`). The sample table has every entry kind the executor sample and
//! Zephyr's OpenAMP table use, and two carve-outs: for tests, fuzzing and documentation.

use object::elf;
use object::write::elf::{FileHeader, ProgramHeader, SectionHeader, Writer};
use object::Endianness;
use qf_resource_table::{
    Header, Region, Trace, Vdev, Vring, FW_RSC_ADDR_ANY, NAME_LEN, RSC_CARVEOUT, RSC_TRACE,
    RSC_VDEV,
};

/// Where the flash segment (code, read-only data, the table) is loaded.
pub const FLASH: u64 = 0x0800_0000;
/// Where the RAM segment is loaded.
pub const RAM: u64 = 0x2000_0000;
/// Memory size of the RAM segment (`.data` and `.bss`).
pub const RAM_SIZE: u64 = 0x4000;

/// Offsets in [`sample_table`]: entry 0, a carve-out at a fixed address in RAM.
pub const CARVEOUT_FIXED: usize = 32;
/// Entry 1, a carve-out Linux places (`da` = `FW_RSC_ADDR_ANY`).
pub const CARVEOUT_ANY: usize = CARVEOUT_FIXED + 4 + Region::SIZE;
/// Entry 2, the rpmsg vdev with two vrings.
pub const VDEV: usize = CARVEOUT_ANY + 4 + Region::SIZE;
/// Entry 3, the trace buffer.
pub const TRACE: usize = VDEV + 4 + Vdev::SIZE + 2 * Vring::SIZE;
/// Length of [`sample_table`].
pub const TABLE_LEN: usize = TRACE + 4 + Trace::SIZE;

/// Read-only data of the default image: the executor's channel name among other strings.
pub const RODATA: &[u8] = b"serving %s\0qfabric\0rpmsg endpoint\0";

fn name(text: &[u8]) -> [u8; NAME_LEN] {
    let mut name = [0; NAME_LEN];
    let len = text.len().min(NAME_LEN);
    name[..len].copy_from_slice(&text[..len]);
    name
}

/// A valid table: a fixed and a placed carve-out, the rpmsg vdev (two vrings of 8 entries
/// aligned to 16, addresses left to Linux, the name service offered, as Zephyr's OpenAMP
/// table) and a trace buffer in RAM.
pub fn sample_table() -> Vec<u8> {
    let mut table = Vec::with_capacity(TABLE_LEN);
    table.extend_from_slice(
        &Header {
            ver: 1,
            num: 4,
            reserved: [0, 0],
        }
        .encode(),
    );
    for offset in [CARVEOUT_FIXED, CARVEOUT_ANY, VDEV, TRACE] {
        table.extend_from_slice(&(offset as u32).to_le_bytes());
    }
    table.extend_from_slice(&RSC_CARVEOUT.to_le_bytes());
    table.extend_from_slice(
        &Region {
            da: (RAM + 0x1000) as u32,
            pa: FW_RSC_ADDR_ANY,
            len: 0x1000,
            flags: 0,
            reserved: 0,
            name: name(b"shared"),
        }
        .encode(),
    );
    table.extend_from_slice(&RSC_CARVEOUT.to_le_bytes());
    table.extend_from_slice(
        &Region {
            da: FW_RSC_ADDR_ANY,
            pa: FW_RSC_ADDR_ANY,
            len: 0x4000,
            flags: 0,
            reserved: 0,
            name: name(b"vdev0buffer"),
        }
        .encode(),
    );
    table.extend_from_slice(&RSC_VDEV.to_le_bytes());
    table.extend_from_slice(&Vdev::rpmsg().encode());
    for notifyid in 0..2 {
        table.extend_from_slice(
            &Vring {
                da: FW_RSC_ADDR_ANY,
                align: 16,
                num: 8,
                notifyid,
                pa: 0,
            }
            .encode(),
        );
    }
    table.extend_from_slice(&RSC_TRACE.to_le_bytes());
    table.extend_from_slice(
        &Trace {
            da: (RAM + 0x2000) as u32,
            len: 0x400,
            reserved: 0,
            name: name(b"Zephyr_log"),
        }
        .encode(),
    );
    table
}

/// How to wrap a table into an image.
#[derive(Debug, Clone)]
pub struct Layout {
    pub is_64: bool,
    pub big_endian: bool,
    /// The table section's name (Linux looks for `.resource_table`).
    pub table_section: Vec<u8>,
    /// The `.rodata` contents.
    pub rodata: Vec<u8>,
}

impl Default for Layout {
    fn default() -> Layout {
        Layout {
            is_64: false,
            big_endian: false,
            table_section: b".resource_table".to_vec(),
            rodata: RODATA.to_vec(),
        }
    }
}

/// A built image and where its parts are.
#[derive(Debug, Clone)]
pub struct Image {
    pub bytes: Vec<u8>,
    /// File offset of the table's first byte.
    pub table_at: u64,
    /// File offset of the `.rodata` contents.
    pub rodata_at: u64,
}

const TEXT: &[u8] = &[0x00, 0xbf, 0xfe, 0xe7, 0x00, 0xbf, 0x00, 0xbf]; // nop; b .; nop; nop
const DATA: &[u8] = &[0x5a; 16];

/// An executable ELF with `table` as its table section's contents.
pub fn image(table: &[u8], layout: &Layout) -> object::write::Result<Image> {
    let endian = if layout.big_endian {
        Endianness::Big
    } else {
        Endianness::Little
    };
    let mut bytes = Vec::new();
    let mut w = Writer::new(endian, layout.is_64, &mut bytes);
    w.reserve_file_header();
    w.reserve_program_headers(2);
    let text_at = w.reserve(TEXT.len(), 4);
    let rodata_at = w.reserve(layout.rodata.len(), 1);
    let table_at = w.reserve(table.len(), 4);
    let data_at = w.reserve(DATA.len(), 4);
    let names = [
        w.add_section_name(b".text"),
        w.add_section_name(b".rodata"),
        w.add_section_name(&layout.table_section),
        w.add_section_name(b".data"),
        w.add_section_name(b".bss"),
    ];
    w.reserve_null_section_index();
    for _ in names {
        w.reserve_section_index();
    }
    w.reserve_shstrtab_section_index();
    w.reserve_shstrtab();
    w.reserve_section_headers();

    let flash = |at: usize| FLASH + (at - text_at) as u64;
    let flash_len = (table_at + table.len() - text_at) as u64;
    w.write_file_header(&FileHeader {
        os_abi: elf::ELFOSABI_NONE,
        abi_version: 0,
        e_type: elf::ET_EXEC,
        e_machine: if layout.is_64 {
            elf::EM_AARCH64
        } else {
            elf::EM_ARM
        },
        e_entry: FLASH + 1,
        e_flags: 0,
    })?;
    w.write_align_program_headers();
    w.write_program_header(&ProgramHeader {
        p_type: elf::PT_LOAD,
        p_flags: elf::PF_R | elf::PF_X,
        p_offset: text_at as u64,
        p_vaddr: FLASH,
        p_paddr: FLASH,
        p_filesz: flash_len,
        p_memsz: flash_len,
        p_align: 4,
    });
    w.write_program_header(&ProgramHeader {
        p_type: elf::PT_LOAD,
        p_flags: elf::PF_R | elf::PF_W,
        p_offset: data_at as u64,
        p_vaddr: RAM,
        p_paddr: RAM,
        p_filesz: DATA.len() as u64,
        p_memsz: RAM_SIZE,
        p_align: 4,
    });
    w.write_align(4);
    w.write(TEXT);
    w.write(&layout.rodata);
    w.write_align(4);
    w.write(table);
    w.write_align(4);
    w.write(DATA);
    w.write_shstrtab();
    w.write_null_section_header();
    let alloc = u64::from(elf::SHF_ALLOC);
    let sections = [
        (
            elf::SHT_PROGBITS,
            alloc | u64::from(elf::SHF_EXECINSTR),
            flash(text_at),
            text_at,
            TEXT.len(),
        ),
        (
            elf::SHT_PROGBITS,
            alloc,
            flash(rodata_at),
            rodata_at,
            layout.rodata.len(),
        ),
        (
            elf::SHT_PROGBITS,
            alloc,
            flash(table_at),
            table_at,
            table.len(),
        ),
        (
            elf::SHT_PROGBITS,
            alloc | u64::from(elf::SHF_WRITE),
            RAM,
            data_at,
            DATA.len(),
        ),
        (
            elf::SHT_NOBITS,
            alloc | u64::from(elf::SHF_WRITE),
            RAM + DATA.len() as u64,
            data_at + DATA.len(),
            (RAM_SIZE as usize) - DATA.len(),
        ),
    ];
    for (name, (sh_type, sh_flags, sh_addr, offset, size)) in names.into_iter().zip(sections) {
        w.write_section_header(&SectionHeader {
            name: Some(name),
            sh_type,
            sh_flags,
            sh_addr,
            sh_offset: offset as u64,
            sh_size: size as u64,
            sh_link: 0,
            sh_info: 0,
            sh_addralign: 4,
            sh_entsize: 0,
        });
    }
    w.write_shstrtab_section_header();
    Ok(Image {
        bytes,
        table_at: table_at as u64,
        rodata_at: rodata_at as u64,
    })
}
