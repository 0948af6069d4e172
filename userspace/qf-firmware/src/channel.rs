//! Where the firmware's rpmsg channel name can be found: a heuristic. The name a firmware
//! announces through the name service (`rpmsg_create_ept(..., "qfabric", ...)` in the MCU
//! executor) is a C string literal, so the linker puts it, NUL-terminated, in read-only data.
//! This looks for each wanted name as a whole string (a NUL or the section start before it, a
//! NUL after it) in the allocated, non-writable PROGBITS sections. It can miss a name built at
//! run time or merged as the tail of a longer string, and it cannot tell whether the firmware
//! really announces the string it finds.

use crate::elf::ReadOnlySection;

/// One place a wanted channel name was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChannelHit {
    pub name: String,
    pub section: String,
    /// File offset of the name's first byte.
    pub at: u64,
}

/// The first whole-string occurrence of each of `names` in `sections`.
pub fn find(image: &[u8], sections: &[ReadOnlySection], names: &[String]) -> Vec<ChannelHit> {
    let mut hits = Vec::new();
    for name in names {
        let wanted = name.as_bytes();
        if wanted.is_empty() {
            continue;
        }
        let hit = sections.iter().find_map(|section| {
            let start = usize::try_from(section.offset).ok()?;
            let end = start.checked_add(usize::try_from(section.size).ok()?)?;
            let bytes = image.get(start..end)?;
            whole_string(bytes, wanted).map(|position| ChannelHit {
                name: name.clone(),
                section: section.name.clone(),
                at: section.offset + position as u64,
            })
        });
        hits.extend(hit);
    }
    hits
}

/// Position of `wanted` in `bytes` as a whole NUL-terminated string.
fn whole_string(bytes: &[u8], wanted: &[u8]) -> Option<usize> {
    let len = wanted.len();
    (0..bytes.len().checked_sub(len)?).find(|&position| {
        bytes[position..position + len] == *wanted
            && bytes[position + len] == 0
            && (position == 0 || bytes[position - 1] == 0)
    })
}

#[cfg(test)]
mod tests {
    use super::whole_string;

    #[test]
    fn only_whole_nul_terminated_strings_count() {
        assert_eq!(whole_string(b"qfabric\0", b"qfabric"), Some(0));
        assert_eq!(whole_string(b"x\0qfabric\0y", b"qfabric"), Some(2));
        assert_eq!(whole_string(b"libqfabric\0", b"qfabric"), None);
        assert_eq!(whole_string(b"qfabric-x\0", b"qfabric"), None);
        // no terminating NUL inside the section
        assert_eq!(whole_string(b"\0qfabric", b"qfabric"), None);
        assert_eq!(whole_string(b"", b"qfabric"), None);
    }
}
