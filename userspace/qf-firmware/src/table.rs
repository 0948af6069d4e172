//! The resource table's own checks: `find_table`'s header rules, then every entry as
//! `rproc_handle_resources` and its handlers see it, then qfabric's rules about the whole table
//! (entry overlaps, the rpmsg vdev, addresses inside the image).

use qf_resource_table::{
    read_u32, Header, Region, Trace, Vdev, Vring, ENTRY_HEADER_LEN, FW_RSC_ADDR_ANY, NAME_LEN,
    RSC_CARVEOUT, RSC_DEVMEM, RSC_TRACE, RSC_VDEV, RSC_VENDOR_END, RSC_VENDOR_START, VERSION,
    VIRTIO_ID_RPMSG, VIRTIO_RPMSG_F_NS,
};

use std::cell::Cell;
use std::collections::HashMap;

use crate::defect::{Defect, DefectKind, Warning};
use crate::elf::Segment;

thread_local! {
    static WORK: Cell<u64> = const { Cell::new(0) };
}

/// One step of the table rules' work (an entry visited, a comparison made), counted per thread
/// so that a test can assert how the work grows with the table, not how long it takes.
fn tick() {
    WORK.with(|work| work.set(work.get() + 1));
}

/// The steps the table rules have taken on this thread (see [`tick`]).
pub fn work() -> u64 {
    WORK.with(Cell::get)
}

/// Intervals `[start, start + len)` indexed to answer "does one of them hold this range" in
/// O(log n): sorted by start, with the farthest end reached so far.
struct Cover {
    starts: Vec<u64>,
    reach: Vec<u128>,
}

impl Cover {
    fn new(intervals: impl IntoIterator<Item = (u64, u64)>) -> Cover {
        let mut intervals: Vec<(u64, u128)> = intervals
            .into_iter()
            .map(|(start, len)| (start, u128::from(start) + u128::from(len)))
            .collect();
        intervals.sort_unstable_by_key(|&(start, _)| {
            tick();
            start
        });
        let mut reach = Vec::with_capacity(intervals.len());
        let mut farthest = 0;
        for &(_, end) in &intervals {
            farthest = farthest.max(end);
            reach.push(farthest);
        }
        Cover {
            starts: intervals.into_iter().map(|(start, _)| start).collect(),
            reach,
        }
    }

    /// Whether one interval holds `[start, start + len)`.
    fn holds(&self, start: u64, len: u64) -> bool {
        let before = self.starts.partition_point(|&first| {
            tick();
            first <= start
        });
        before > 0 && self.reach[before - 1] >= u128::from(start) + u128::from(len)
    }
}

/// What one entry holds, as far as it could be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resource {
    Carveout(Region),
    Devmem(Region),
    Trace(Trace),
    /// A vdev and the vrings that fit in the table; `complete` when all of them and the config
    /// space did.
    Vdev {
        vdev: Vdev,
        vrings: Vec<Vring>,
        complete: bool,
    },
    /// A vendor type (`RSC_VENDOR_START..=RSC_VENDOR_END`), handed to the platform driver.
    Vendor,
    /// A type Linux does not know.
    Unknown,
    /// A known type whose fixed part runs past the end of the table.
    Truncated,
}

/// One entry of the table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Its index in the offset array.
    pub index: usize,
    /// `offset[index]`, from the start of the table.
    pub offset: u32,
    /// File offset of its type word.
    pub at: u64,
    pub rsc_type: u32,
    pub resource: Resource,
}

/// The table as read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableInfo {
    pub header: Header,
    pub size: u64,
    /// File offset of the table.
    pub at: u64,
    pub entries: Vec<Entry>,
}

/// Checks `table` (the section's bytes, at file offset `base`). `memory` is the ELF's PT_LOAD
/// segments, for the address rules; `None` (a bare table) skips them. Returns `None` when the
/// header stops Linux from reading entries.
pub fn check(
    table: &[u8],
    base: u64,
    memory: Option<&[Segment]>,
    defects: &mut Vec<Defect>,
    warnings: &mut Vec<Warning>,
) -> Option<TableInfo> {
    let size = table.len() as u64;
    // find_table, in its order; each of these makes Linux refuse the firmware.
    let Some(header) = Header::parse(table) else {
        defects.push(Defect::new(
            DefectKind::TableHeaderless,
            base,
            format!(
                "the section has {size} bytes, the header needs {}",
                Header::SIZE
            ),
        ));
        return None;
    };
    if header.ver != VERSION {
        defects.push(Defect::new(
            DefectKind::BadVersion,
            base + Header::VER as u64,
            format!("ver is {}", header.ver),
        ));
        return None;
    }
    if let Some(k) = header.reserved.iter().position(|&word| word != 0) {
        defects.push(Defect::new(
            DefectKind::ReservedNotZero,
            base + (Header::RESERVED + 4 * k) as u64,
            format!("table header reserved[{k}] is {:#x}", header.reserved[k]),
        ));
        return None;
    }
    let needed = Header::len_with_offsets(header.num);
    if needed > size {
        defects.push(Defect::new(
            DefectKind::OffsetsPastEnd,
            base + Header::NUM as u64,
            format!(
                "num is {}: the header and offsets need {needed} bytes, the section has {size}",
                header.num
            ),
        ));
        return None;
    }

    let mut entries = Vec::new();
    // Byte ranges [start, end) of the table each part uses, for the overlap rule.
    let mut extents = vec![Extent {
        start: 0,
        end: needed,
        what: "the table header and offsets".to_string(),
    }];
    for index in 0..header.num as usize {
        let slot = Header::OFFSETS + 4 * index;
        let offset = read_u32(table, slot).unwrap_or(u32::MAX);
        // rproc_handle_resources: avail = table_sz - offset - sizeof(hdr) must not be negative.
        let body_start = u64::from(offset) + ENTRY_HEADER_LEN as u64;
        if body_start > size {
            defects.push(Defect::new(
                DefectKind::EntryPastEnd,
                base + slot as u64,
                format!("offset[{index}] is {offset}, the table has {size} bytes"),
            ));
            continue;
        }
        let at = base + u64::from(offset);
        let rsc_type = read_u32(table, offset as usize).unwrap_or(u32::MAX);
        let body = table.get(body_start as usize..).unwrap_or_default();
        let (resource, body_len) = entry(index, rsc_type, body, at, defects, warnings);
        extents.push(Extent {
            start: u64::from(offset),
            end: body_start + body_len,
            what: format!("entry {index}"),
        });
        entries.push(Entry {
            index,
            offset,
            at,
            rsc_type,
            resource,
        });
    }
    carveout_names(&entries, table, base, defects);
    overlaps(&mut extents, base, defects);
    rpmsg(&entries, base, defects);
    if let Some(segments) = memory {
        addresses(&entries, segments, defects);
    }
    Some(TableInfo {
        header,
        size,
        at: base,
        entries,
    })
}

struct Extent {
    start: u64,
    end: u64,
    what: String,
}

/// One entry's handler checks; returns what it holds and how many body bytes it uses.
fn entry(
    index: usize,
    rsc_type: u32,
    body: &[u8],
    at: u64,
    defects: &mut Vec<Defect>,
    warnings: &mut Vec<Warning>,
) -> (Resource, u64) {
    let field = |offset: usize| at + (ENTRY_HEADER_LEN + offset) as u64;
    let avail = body.len();
    let truncated = |defects: &mut Vec<Defect>, what: &str, need: u64| {
        defects.push(Defect::new(
            DefectKind::EntryTruncated,
            at,
            format!(
                "entry {index} ({what}) needs {need} bytes after its type, the table has {avail} left"
            ),
        ));
    };
    match rsc_type {
        RSC_CARVEOUT | RSC_DEVMEM => {
            let what = if rsc_type == RSC_CARVEOUT {
                "carveout"
            } else {
                "devmem"
            };
            let Some(region) = Region::parse(body) else {
                truncated(defects, what, Region::SIZE as u64);
                return (Resource::Truncated, 0);
            };
            if region.reserved != 0 {
                defects.push(Defect::new(
                    DefectKind::ReservedNotZero,
                    field(Region::RESERVED),
                    format!("entry {index} ({what}) reserved is {:#x}", region.reserved),
                ));
            }
            if rsc_type == RSC_CARVEOUT {
                (Resource::Carveout(region), Region::SIZE as u64)
            } else {
                warnings.push(Warning {
                    at,
                    text: format!(
                        "entry {index} is a devmem entry: rproc_handle_devmem refuses it (-EINVAL, \
                         no message) unless the remote processor sits behind an IOMMU"
                    ),
                });
                (Resource::Devmem(region), Region::SIZE as u64)
            }
        }
        RSC_TRACE => {
            let Some(trace) = Trace::parse(body) else {
                truncated(defects, "trace", Trace::SIZE as u64);
                return (Resource::Truncated, 0);
            };
            if trace.reserved != 0 {
                defects.push(Defect::new(
                    DefectKind::ReservedNotZero,
                    field(Trace::RESERVED),
                    format!("entry {index} (trace) reserved is {:#x}", trace.reserved),
                ));
            }
            (Resource::Trace(trace), Trace::SIZE as u64)
        }
        RSC_VDEV => vdev(index, body, at, defects),
        RSC_VENDOR_START..=RSC_VENDOR_END => {
            warnings.push(Warning {
                at,
                text: format!(
                    "entry {index} has vendor type {rsc_type}: Linux hands it to the platform \
                     driver's handle_rsc, or warns \"unsupported vendor resource\" and skips it"
                ),
            });
            (Resource::Vendor, 0)
        }
        _ => {
            defects.push(Defect::new(
                DefectKind::UnknownType,
                at,
                format!("entry {index} has type {rsc_type}"),
            ));
            (Resource::Unknown, 0)
        }
    }
}

/// `rproc_handle_vdev` and `rproc_parse_vring`, then qfabric's vring rules.
fn vdev(index: usize, body: &[u8], at: u64, defects: &mut Vec<Defect>) -> (Resource, u64) {
    let field = |offset: usize| at + (ENTRY_HEADER_LEN + offset) as u64;
    let Some(vdev) = Vdev::parse(body) else {
        defects.push(Defect::new(
            DefectKind::EntryTruncated,
            at,
            format!(
                "entry {index} (vdev) needs {} bytes after its type, the table has {} left",
                Vdev::SIZE,
                body.len()
            ),
        ));
        return (Resource::Truncated, 0);
    };
    let vrings: Vec<Vring> = (0..usize::from(vdev.num_of_vrings))
        .map_while(|k| Vring::parse(body.get(Vdev::vring_offset(k)..)?))
        .collect();
    let need = Vdev::len_with(vdev.num_of_vrings, vdev.config_len);
    if need > body.len() as u64 {
        defects.push(Defect::new(
            DefectKind::EntryTruncated,
            at,
            format!(
                "entry {index} (vdev, {} vrings, config_len {}) needs {need} bytes after its type, \
                 the table has {} left",
                vdev.num_of_vrings,
                vdev.config_len,
                body.len()
            ),
        ));
        let resource = Resource::Vdev {
            vdev,
            vrings,
            complete: false,
        };
        return (resource, Vdev::SIZE as u64);
    }
    if vdev.reserved != [0, 0] {
        defects.push(Defect::new(
            DefectKind::ReservedNotZero,
            field(Vdev::RESERVED),
            format!("entry {index} (vdev) reserved is {:02x?}", vdev.reserved),
        ));
    }
    // Linux refuses more than two vrings before it looks at any of them.
    let checked = if vdev.num_of_vrings > 2 {
        defects.push(Defect::new(
            DefectKind::TooManyVrings,
            field(Vdev::NUM_OF_VRINGS),
            format!(
                "entry {index} (vdev) num_of_vrings is {}",
                vdev.num_of_vrings
            ),
        ));
        0
    } else {
        vrings.len()
    };
    for (k, vring) in vrings.iter().enumerate().take(checked) {
        let vring_field = |offset: usize| field(Vdev::vring_offset(k) + offset);
        if vring.num == 0 || vring.align == 0 {
            let (offset, name, value) = if vring.num == 0 {
                (Vring::NUM, "num", vring.num)
            } else {
                (Vring::ALIGN, "align", vring.align)
            };
            defects.push(Defect::new(
                DefectKind::VringZero,
                vring_field(offset),
                format!("entry {index} (vdev) vring{k} {name} is {value}"),
            ));
            continue;
        }
        if !vring.num.is_power_of_two() {
            defects.push(Defect::new(
                DefectKind::VringNumNotPowerOfTwo,
                vring_field(Vring::NUM),
                format!("entry {index} (vdev) vring{k} num is {}", vring.num),
            ));
        }
        if !vring.align.is_power_of_two() {
            defects.push(Defect::new(
                DefectKind::VringAlignNotPowerOfTwo,
                vring_field(Vring::ALIGN),
                format!("entry {index} (vdev) vring{k} align is {}", vring.align),
            ));
        }
    }
    let resource = Resource::Vdev {
        vdev,
        vrings,
        complete: true,
    };
    (resource, need)
}

/// `rproc_handle_carveout` passes each carve-out's name to `vsnprintf` as the format string
/// (with no arguments) and registers the carve-out under what it prints, 31 bytes at most; a
/// second carve-out of a registered name is refused. `table` is the table's bytes: a name field
/// without a NUL goes on into the bytes after it, as Linux's string does.
fn carveout_names(entries: &[Entry], table: &[u8], base: u64, defects: &mut Vec<Defect>) {
    let mut seen: HashMap<Vec<u8>, usize> = HashMap::new();
    for entry in entries {
        tick();
        let Resource::Carveout(region) = &entry.resource else {
            continue;
        };
        let name_at = entry.at + (ENTRY_HEADER_LEN + Region::NAME) as u64;
        let format = usize::try_from(name_at - base)
            .ok()
            .and_then(|start| table.get(start..))
            .unwrap_or(&region.name[..]);
        let format = &format[..format.iter().position(|&b| b == 0).unwrap_or(format.len())];
        let shown = String::from_utf8_lossy(&format[..format.len().min(NAME_LEN)]).into_owned();
        let printed = linux_name(format);
        if let Some((position, conversion)) = printed.conversion {
            let at = name_at + position as u64;
            let spec = String::from_utf8_lossy(conversion.spec()).into_owned();
            let (kind, what) = match conversion {
                Conversion::Dereference(_) => (
                    DefectKind::CarveoutNameDereference,
                    "dereferences an argument that is not there",
                ),
                Conversion::Value(_) => (
                    DefectKind::CarveoutNameFormat,
                    "prints an argument that is not there",
                ),
                Conversion::Stop(_) => (
                    DefectKind::CarveoutNameFormat,
                    "is not supported: WARN_ONCE, and the name ends there",
                ),
            };
            defects.push(Defect::new(
                kind,
                at,
                format!(
                    "entry {} (carveout \"{shown}\"): the conversion \"{spec}\" {what}",
                    entry.index
                ),
            ));
        }
        let Some(name) = printed.name else {
            continue;
        };
        match seen.entry(name) {
            std::collections::hash_map::Entry::Occupied(first) => {
                defects.push(Defect::new(
                    DefectKind::DuplicateCarveoutName,
                    name_at,
                    format!(
                        "entry {} (carveout \"{shown}\") has the name of entry {}",
                        entry.index,
                        first.get()
                    ),
                ));
            }
            std::collections::hash_map::Entry::Vacant(slot) => {
                slot.insert(entry.index);
            }
        }
    }
}

/// A conversion in a carve-out's name, as Linux 6.12's `format_decode` reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Conversion {
    /// `%s` or `%p` followed by an extension letter: reads through a pointer argument.
    Dereference(Vec<u8>),
    /// A number (`%d`, `%x`, `%c`, a `*` width or precision) or a plain `%p`: prints an
    /// argument's value.
    Value(Vec<u8>),
    /// `%n` or an unknown conversion: `WARN_ONCE` and the output ends.
    Stop(Vec<u8>),
}

impl Conversion {
    /// The conversion's text, from its `%`.
    pub fn spec(&self) -> &[u8] {
        match self {
            Conversion::Dereference(spec) | Conversion::Value(spec) | Conversion::Stop(spec) => {
                spec
            }
        }
    }
}

/// What `vsnprintf(name, 32, format)` with no arguments prints.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinuxName {
    /// The name (31 bytes at most), when no argument is read.
    pub name: Option<Vec<u8>>,
    /// The worst conversion and its position in the format: a dereference before a value.
    pub conversion: Option<(usize, Conversion)>,
}

/// Reads `format` as `format_decode` (lib/vsprintf.c:2510-2667) does and prints it as
/// `vsnprintf` (lib/vsprintf.c:2733-2830) would with no arguments.
pub fn linux_name(format: &[u8]) -> LinuxName {
    let mut name = Vec::new();
    let mut conversion: Option<(usize, Conversion)> = None;
    let mut predictable = true;
    let mut i = 0;
    while i < format.len() {
        if format[i] != b'%' {
            name.push(format[i]);
            i += 1;
            continue;
        }
        let start = i;
        i += 1;
        let at = |i: usize| format.get(i).copied().unwrap_or(0);
        while matches!(at(i), b'-' | b'+' | b' ' | b'#' | b'0') {
            i += 1;
        }
        // a field width, then a precision after '.': digits, or '*' for an argument
        let mut takes_argument = false;
        let mut number = |i: &mut usize| {
            if at(*i) == b'*' {
                takes_argument = true;
                *i += 1;
                return;
            }
            while at(*i).is_ascii_digit() {
                *i += 1;
            }
        };
        number(&mut i);
        if at(i) == b'.' {
            i += 1;
            number(&mut i);
        }
        if matches!(at(i), b'h' | b'l' | b'L' | b'z' | b't') {
            let qualifier = at(i);
            i += 1;
            if (qualifier == b'l' || qualifier == b'h') && at(i) == qualifier {
                i += 1;
            }
        }
        let found = match at(i) {
            b'%' if !takes_argument => {
                name.push(b'%');
                i += 1;
                None
            }
            b'%' | b'c' | b'o' | b'x' | b'X' | b'd' | b'i' | b'u' => {
                i += 1;
                Some(Conversion::Value(format[start..i].to_vec()))
            }
            b's' => {
                i += 1;
                Some(Conversion::Dereference(format[start..i].to_vec()))
            }
            b'p' => {
                i += 1;
                if at(i).is_ascii_alphanumeric() {
                    while at(i).is_ascii_alphanumeric() {
                        i += 1;
                    }
                    Some(Conversion::Dereference(format[start..i].to_vec()))
                } else {
                    Some(Conversion::Value(format[start..i].to_vec()))
                }
            }
            _ => {
                let end = (i + 1).min(format.len());
                Some(Conversion::Stop(format[start..end].to_vec()))
            }
        };
        let Some(found) = found else {
            continue;
        };
        let stop = matches!(found, Conversion::Stop(_));
        if !stop {
            predictable = false;
        }
        let worse = match (&conversion, &found) {
            (None, _) => true,
            (Some((_, Conversion::Dereference(_))), _) => false,
            (Some(_), Conversion::Dereference(_)) => true,
            _ => false,
        };
        if worse {
            conversion = Some((start, found));
        }
        if stop {
            break;
        }
    }
    name.truncate(NAME_LEN - 1);
    LinuxName {
        name: predictable.then_some(name),
        conversion,
    }
}

/// qfabric: no byte of the table belongs to two parts.
fn overlaps(extents: &mut [Extent], base: u64, defects: &mut Vec<Defect>) {
    extents.sort_by_key(|extent| {
        tick();
        extent.start
    });
    let mut reach: Option<&Extent> = None;
    for extent in extents.iter() {
        tick();
        match reach {
            Some(before) if extent.start < before.end => {
                defects.push(Defect::new(
                    DefectKind::EntriesOverlap,
                    base + extent.start,
                    format!(
                        "{} (bytes {}..{}) overlaps {} (bytes {}..{})",
                        extent.what,
                        extent.start,
                        extent.end,
                        before.what,
                        before.start,
                        before.end
                    ),
                ));
                if extent.end > before.end {
                    reach = Some(extent);
                }
            }
            _ => reach = Some(extent),
        }
    }
}

/// The rules an rpmsg vdev must meet for qfabric's channel to appear.
fn rpmsg(entries: &[Entry], base: u64, defects: &mut Vec<Defect>) {
    let rpmsg = entries.iter().find_map(|entry| match &entry.resource {
        Resource::Vdev {
            vdev,
            vrings,
            complete,
        } if vdev.id == VIRTIO_ID_RPMSG => Some((entry, vdev, vrings, *complete)),
        _ => None,
    });
    let Some((entry, vdev, vrings, complete)) = rpmsg else {
        let ids: Vec<String> = entries
            .iter()
            .filter_map(|entry| match &entry.resource {
                Resource::Vdev { vdev, .. } => Some(vdev.id.to_string()),
                _ => None,
            })
            .collect();
        defects.push(Defect::new(
            DefectKind::NoRpmsgVdev,
            base,
            if ids.is_empty() {
                "the table has no vdev entry".to_string()
            } else {
                format!("vdev ids are {}", ids.join(", "))
            },
        ));
        return;
    };
    let field = |offset: usize| entry.at + (ENTRY_HEADER_LEN + offset) as u64;
    if vdev.dfeatures & (1 << VIRTIO_RPMSG_F_NS) == 0 {
        defects.push(Defect::new(
            DefectKind::MissingNsFeature,
            field(Vdev::DFEATURES),
            format!(
                "entry {} (rpmsg vdev) dfeatures is {:#x}",
                entry.index, vdev.dfeatures
            ),
        ));
    }
    if !complete {
        return;
    }
    if vdev.num_of_vrings < 2 {
        defects.push(Defect::new(
            DefectKind::RpmsgVringCount,
            field(Vdev::NUM_OF_VRINGS),
            format!(
                "entry {} (rpmsg vdev) num_of_vrings is {}",
                entry.index, vdev.num_of_vrings
            ),
        ));
    }
    if let [rx, tx, ..] = vrings.as_slice() {
        if rx.num != tx.num && rx.num != 0 && tx.num != 0 {
            defects.push(Defect::new(
                DefectKind::VringsAsymmetric,
                field(Vdev::vring_offset(1) + Vring::NUM),
                format!(
                    "entry {} (rpmsg vdev) vring0 num is {}, vring1 num is {}",
                    entry.index, rx.num, tx.num
                ),
            ));
        }
    }
}

/// qfabric: fixed addresses name memory of the image (or declared device memory; for a trace
/// buffer also a carve-out with a fixed address, which `rproc_da_to_va` searches).
fn addresses(entries: &[Entry], segments: &[Segment], defects: &mut Vec<Defect>) {
    let image = Cover::new(
        segments
            .iter()
            .map(|segment| (segment.paddr, segment.memsz)),
    );
    let regions = |wanted: fn(&Resource) -> Option<&Region>| {
        Cover::new(entries.iter().filter_map(|entry| {
            let region = wanted(&entry.resource)?;
            (region.da != FW_RSC_ADDR_ANY).then_some((u64::from(region.da), u64::from(region.len)))
        }))
    };
    let devmem = regions(|resource| match resource {
        Resource::Devmem(region) => Some(region),
        _ => None,
    });
    let carveouts = regions(|resource| match resource {
        Resource::Carveout(region) => Some(region),
        _ => None,
    });
    for entry in entries {
        tick();
        let (kind, what, name, da, len, elsewhere) = match &entry.resource {
            Resource::Carveout(region) if region.da != FW_RSC_ADDR_ANY => (
                DefectKind::CarveoutOutsideImage,
                "carveout",
                &region.name,
                region.da,
                region.len,
                &devmem,
            ),
            Resource::Trace(trace) => (
                DefectKind::TraceOutsideImage,
                "trace",
                &trace.name,
                trace.da,
                trace.len,
                &carveouts,
            ),
            _ => continue,
        };
        let (start, size) = (u64::from(da), u64::from(len));
        if !image.holds(start, size) && !elsewhere.holds(start, size) {
            defects.push(Defect::new(
                kind,
                entry.at + ENTRY_HEADER_LEN as u64,
                format!(
                    "entry {} ({what} \"{}\") da {da:#x}, len {len:#x}",
                    entry.index,
                    String::from_utf8_lossy(qf_resource_table::name_bytes(name)),
                ),
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use qf_resource_table::Header;

    /// A table of `n` carve-outs (fixed addresses, distinct names) and `n` devmem entries.
    fn big_table(n: u32) -> Vec<u8> {
        let count = 2 * n;
        let mut table = Header {
            ver: 1,
            num: count,
            reserved: [0, 0],
        }
        .encode()
        .to_vec();
        let first = Header::len_with_offsets(count) as u32;
        let entry_len = (ENTRY_HEADER_LEN + Region::SIZE) as u32;
        for k in 0..count {
            table.extend_from_slice(&(first + k * entry_len).to_le_bytes());
        }
        for k in 0..count {
            let devmem = k % 2 == 1;
            let mut name = [0u8; NAME_LEN];
            let text = format!("c{k}");
            name[..text.len()].copy_from_slice(text.as_bytes());
            let rsc_type = if devmem { RSC_DEVMEM } else { RSC_CARVEOUT };
            table.extend_from_slice(&rsc_type.to_le_bytes());
            table.extend_from_slice(
                &Region {
                    da: 0x4000_0000 + 0x100 * (k / 2),
                    pa: FW_RSC_ADDR_ANY,
                    len: if devmem { 0x100 } else { 0x80 },
                    flags: 0,
                    reserved: 0,
                    name,
                }
                .encode(),
            );
        }
        table
    }

    /// Steps the table rules take on a table of `n` carve-outs and `n` devmem entries, all
    /// checked against 64 segments.
    fn steps(n: u32) -> u64 {
        let table = big_table(n);
        let segments: Vec<Segment> = (0..64)
            .map(|k| Segment {
                index: k,
                header_at: 0,
                offset: 0,
                vaddr: 0,
                paddr: 0x1000_0000 * k as u64,
                filesz: 0,
                memsz: 0x100,
                flags: 0,
            })
            .collect();
        let (mut defects, mut warnings) = (Vec::new(), Vec::new());
        let before = work();
        let info = check(&table, 0, Some(&segments), &mut defects, &mut warnings).unwrap();
        assert_eq!(info.entries.len(), 2 * n as usize);
        // each carve-out lies in the devmem entry after it; nothing is a duplicate
        assert_eq!(defects.len(), 1, "{:?}", defects.first());
        assert_eq!(defects[0].kind, DefectKind::NoRpmsgVdev);
        work() - before
    }

    #[test]
    fn the_table_rules_take_n_log_n_steps_not_n_squared() {
        let small = steps(1_000);
        let large = steps(16_000);
        // 16 times the entries: n log n gives about 16 * 14 / 10 = 22 times the steps, n^2
        // gives 256 times.
        assert!(
            large < 32 * small,
            "{small} steps for 2000 entries, {large} for 32000"
        );
    }

    #[test]
    fn a_name_prints_as_vsnprintf_prints_it_with_no_arguments() {
        let plain = linux_name(b"vdev0buffer");
        assert_eq!(plain.name.as_deref(), Some(&b"vdev0buffer"[..]));
        assert_eq!(plain.conversion, None);
        assert_eq!(linux_name(b"50%%").name.as_deref(), Some(&b"50%"[..]));
        // 32 bytes without a NUL: 31 are registered
        assert_eq!(
            linux_name(&[b'a'; 40]).name.map(|name| name.len()),
            Some(31)
        );
        let of = |format: &[u8]| linux_name(format).conversion;
        assert_eq!(
            of(b"x%s"),
            Some((1, Conversion::Dereference(b"%s".to_vec())))
        );
        assert_eq!(
            of(b"%-08.3lls"),
            Some((0, Conversion::Dereference(b"%-08.3lls".to_vec())))
        );
        assert_eq!(
            of(b"%pK"),
            Some((0, Conversion::Dereference(b"%pK".to_vec())))
        );
        assert_eq!(of(b"%p-"), Some((0, Conversion::Value(b"%p".to_vec()))));
        assert_eq!(of(b"%lx"), Some((0, Conversion::Value(b"%lx".to_vec()))));
        assert_eq!(of(b"%*%"), Some((0, Conversion::Value(b"%*%".to_vec()))));
        // digits after a '*' width are no width: the conversion is unknown
        assert_eq!(of(b"%*5s"), Some((0, Conversion::Stop(b"%*5".to_vec()))));
        // a dereference is reported before a value, wherever it is
        assert_eq!(
            of(b"%d%s"),
            Some((2, Conversion::Dereference(b"%s".to_vec())))
        );
        // %n and unknown conversions end the output (and what follows is not read)
        let stop = linux_name(b"ab%nc%s");
        assert_eq!(stop.name.as_deref(), Some(&b"ab"[..]));
        assert_eq!(stop.conversion, Some((2, Conversion::Stop(b"%n".to_vec()))));
        assert_eq!(
            linux_name(b"ab%").conversion,
            Some((2, Conversion::Stop(b"%".to_vec())))
        );
        // a value makes the name unpredictable
        assert_eq!(linux_name(b"a%d").name, None);
    }
}
