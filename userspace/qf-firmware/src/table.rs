//! The resource table's own checks: `find_table`'s header rules, then every entry as
//! `rproc_handle_resources` and its handlers see it, then qfabric's rules about the whole table
//! (entry overlaps, the rpmsg vdev, addresses inside the image).

use qf_resource_table::{
    read_u32, Header, Region, Trace, Vdev, Vring, ENTRY_HEADER_LEN, FW_RSC_ADDR_ANY, NAME_LEN,
    RSC_CARVEOUT, RSC_DEVMEM, RSC_TRACE, RSC_VDEV, RSC_VENDOR_END, RSC_VENDOR_START, VERSION,
    VIRTIO_ID_RPMSG, VIRTIO_RPMSG_F_NS,
};

use crate::defect::{Defect, DefectKind, Warning};
use crate::elf::{contains, Segment};

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
    carveout_names(&entries, defects);
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

/// `rproc_handle_carveout` registers each carve-out under its name (`vsnprintf` into 32 bytes,
/// so the first 31 count) and refuses a second one of the same name.
fn carveout_names(entries: &[Entry], defects: &mut Vec<Defect>) {
    let key = |region: &Region| {
        let name = qf_resource_table::name_bytes(&region.name);
        name[..name.len().min(NAME_LEN - 1)].to_vec()
    };
    let mut seen: Vec<(Vec<u8>, usize)> = Vec::new();
    for entry in entries {
        let Resource::Carveout(region) = &entry.resource else {
            continue;
        };
        let name = key(region);
        if let Some((_, first)) = seen.iter().find(|(known, _)| *known == name) {
            defects.push(Defect::new(
                DefectKind::DuplicateCarveoutName,
                entry.at + (ENTRY_HEADER_LEN + Region::NAME) as u64,
                format!(
                    "entry {} (carveout \"{}\") has the name of entry {first}",
                    entry.index,
                    String::from_utf8_lossy(&name)
                ),
            ));
        } else {
            seen.push((name, entry.index));
        }
    }
}

/// qfabric: no byte of the table belongs to two parts.
fn overlaps(extents: &mut [Extent], base: u64, defects: &mut Vec<Defect>) {
    extents.sort_by_key(|extent| extent.start);
    let mut reach: Option<&Extent> = None;
    for extent in extents.iter() {
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

/// qfabric: fixed addresses name memory of the image (or declared device memory).
fn addresses(entries: &[Entry], segments: &[Segment], defects: &mut Vec<Defect>) {
    let in_image = |da: u32, len: u32| {
        segments
            .iter()
            .any(|segment| segment.holds(u64::from(da), u64::from(len)))
    };
    let devmem: Vec<&Region> = entries
        .iter()
        .filter_map(|entry| match &entry.resource {
            Resource::Devmem(region) => Some(region),
            _ => None,
        })
        .collect();
    for entry in entries {
        let da_field = entry.at + ENTRY_HEADER_LEN as u64;
        match &entry.resource {
            Resource::Carveout(region) if region.da != FW_RSC_ADDR_ANY => {
                let declared = devmem.iter().any(|device| {
                    contains(
                        u64::from(device.da),
                        u64::from(device.len),
                        u64::from(region.da),
                        u64::from(region.len),
                    )
                });
                if !in_image(region.da, region.len) && !declared {
                    defects.push(Defect::new(
                        DefectKind::CarveoutOutsideImage,
                        da_field,
                        format!(
                            "entry {} (carveout \"{}\") da {:#x}, len {:#x}",
                            entry.index,
                            String::from_utf8_lossy(qf_resource_table::name_bytes(&region.name)),
                            region.da,
                            region.len
                        ),
                    ));
                }
            }
            Resource::Trace(trace) if !in_image(trace.da, trace.len) => {
                defects.push(Defect::new(
                    DefectKind::TraceOutsideImage,
                    da_field,
                    format!(
                        "entry {} (trace \"{}\") da {:#x}, len {:#x}",
                        entry.index,
                        String::from_utf8_lossy(qf_resource_table::name_bytes(&trace.name)),
                        trace.da,
                        trace.len
                    ),
                ));
            }
            _ => {}
        }
    }
}
