//! An rpmsg endpoint to the MCU's `qfabric` channel through Linux's `rpmsg_char`
//! (`/dev/rpmsg_ctrlN` creates it, `/dev/rpmsgN` carries it): one message per read or write,
//! dispatched by the kernel's rpmsg/virtio stack, with no userspace relay between the caller and
//! the MCU. The `unsafe` here is two ioctls libc does not wrap.
#![allow(unsafe_code)]

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::os::fd::{AsFd, AsRawFd};
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, Context, Result};

/// The channel the MCU announces.
pub const CHANNEL: &str = "qfabric";
/// Where the rpmsg core lists announced channels (`name`, `src`, `dst` attributes).
const RPMSG_DEVICES: &str = "/sys/bus/rpmsg/devices";
/// `RPMSG_ADDR_ANY`: let the kernel pick our address.
const ADDR_ANY: u32 = 0xffff_ffff;
/// `include/uapi/linux/rpmsg.h`: `_IOW(0xb5, 0x1, struct rpmsg_endpoint_info)`, 40 bytes.
const RPMSG_CREATE_EPT_IOCTL: u64 = (1 << 30) | (40 << 16) | (0xb5 << 8) | 0x1;
/// `_IO(0xb5, 0x2)`.
const RPMSG_DESTROY_EPT_IOCTL: u64 = (0xb5 << 8) | 0x2;

#[repr(C)]
struct EndpointInfo {
    name: [u8; 32],
    src: u32,
    dst: u32,
}

pub struct Endpoint {
    file: File,
    pub path: PathBuf,
}

impl Endpoint {
    /// Creates an endpoint named `qfabric` to the address the MCU announced its [`CHANNEL`] at
    /// (0x400 on the virtual board; whatever OpenAMP gave it on a board) and opens its
    /// `/dev/rpmsgN`.
    pub fn open_qfabric() -> Result<Endpoint> {
        let mcu_addr = channel_addr(Path::new(RPMSG_DEVICES), CHANNEL)?;
        // After a crash recovery the control device is a new one: take whichever exists.
        let ctrl_path = std::fs::read_dir("/dev")
            .context("read /dev")?
            .filter_map(|e| e.ok())
            .map(|e| e.path())
            .find(|p| {
                p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with("rpmsg_ctrl"))
            })
            .context("no /dev/rpmsg_ctrl*")?;
        let ctrl = OpenOptions::new()
            .read(true)
            .write(true)
            .open(&ctrl_path)
            .with_context(|| format!("open {}", ctrl_path.display()))?;
        let before = eptdevs()?;
        let mut info = EndpointInfo {
            name: [0; 32],
            src: ADDR_ANY,
            dst: mcu_addr,
        };
        info.name[..7].copy_from_slice(b"qfabric");
        // SAFETY: the ioctl reads a `struct rpmsg_endpoint_info`, which `EndpointInfo` mirrors.
        let rc = unsafe { libc::ioctl(ctrl.as_raw_fd(), RPMSG_CREATE_EPT_IOCTL as _, &info) };
        if rc != 0 {
            bail!(
                "RPMSG_CREATE_EPT_IOCTL: {}",
                std::io::Error::last_os_error()
            );
        }
        // The new eptdev is the one that was not there before; devtmpfs creates its node.
        let name = eptdevs()?
            .into_iter()
            .find(|n| !before.contains(n))
            .context("no new /sys/class/rpmsg/rpmsgN after RPMSG_CREATE_EPT_IOCTL")?;
        let path = PathBuf::from("/dev").join(&name);
        for _ in 0..100 {
            if path.exists() {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(&path)
            .with_context(|| format!("open {}", path.display()))?;
        Ok(Endpoint { file, path })
    }

    /// Sends one message (one rpmsg buffer).
    pub fn send(&mut self, message: &[u8]) -> std::io::Result<()> {
        let n = self.file.write(message)?;
        if n != message.len() {
            return Err(std::io::Error::other(format!(
                "short write {n}/{}",
                message.len()
            )));
        }
        Ok(())
    }

    /// Receives one message, waiting at most `timeout`; no message in time is an error.
    pub fn recv(&mut self, buf: &mut [u8], timeout: Duration) -> Result<usize> {
        Eptdev::try_recv(self, buf, timeout)
            .with_context(|| format!("reading {}", self.path.display()))?
            .with_context(|| format!("no reply within {} ms", timeout.as_millis()))
    }

    /// Destroys the endpoint (its /dev node goes away).
    pub fn destroy(self) -> Result<()> {
        Eptdev::destroy(self)
    }
}

/// One rpmsg endpoint device as [`crate::domain::RpmsgChar`] uses it: [`Endpoint`] on a board;
/// host tests emulate one (the reconnection is tested there, no rpmsg bus being on a host).
pub trait Eptdev: Send {
    /// The endpoint's device node, for messages.
    fn path(&self) -> &Path;
    /// Sends one message; `EPIPE` once the channel went away.
    fn send(&mut self, message: &[u8]) -> std::io::Result<()>;
    /// Receives one message, waiting at most `timeout`; `None` if none came, `EPIPE` once the
    /// channel went away.
    fn try_recv(&mut self, buf: &mut [u8], timeout: Duration) -> std::io::Result<Option<usize>>;
    /// Whether the channel went away (`rpmsg_char` polls `POLLERR` then), asked between calls.
    fn hung_up(&self) -> bool;
    /// Destroys a live endpoint (not one whose channel went away: the kernel did that).
    fn destroy(self) -> Result<()>;
}

impl Eptdev for Endpoint {
    fn path(&self) -> &Path {
        &self.path
    }

    fn send(&mut self, message: &[u8]) -> std::io::Result<()> {
        Endpoint::send(self, message)
    }

    fn try_recv(&mut self, buf: &mut [u8], timeout: Duration) -> std::io::Result<Option<usize>> {
        let mut pfd = libc::pollfd {
            fd: self.file.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        let ms = libc::c_int::try_from(timeout.as_millis()).unwrap_or(libc::c_int::MAX);
        // SAFETY: one valid pollfd.
        let rc = unsafe { libc::poll(&mut pfd, 1, ms) };
        if rc < 0 {
            return Err(std::io::Error::last_os_error());
        }
        if rc == 0 {
            return Ok(None);
        }
        // rpmsg_char polls POLLERR (and nothing else) once the channel is gone.
        if pfd.revents & libc::POLLIN == 0 && pfd.revents & (libc::POLLERR | libc::POLLHUP) != 0 {
            return Err(std::io::Error::from_raw_os_error(libc::EPIPE));
        }
        self.file.read(buf).map(Some)
    }

    fn hung_up(&self) -> bool {
        crate::reconnect::hung_up(self.file.as_fd())
    }

    fn destroy(self) -> Result<()> {
        // SAFETY: a plain ioctl without argument on our open endpoint.
        let rc = unsafe { libc::ioctl(self.file.as_raw_fd(), RPMSG_DESTROY_EPT_IOCTL as _) };
        if rc != 0 {
            bail!(
                "RPMSG_DESTROY_EPT_IOCTL: {}",
                std::io::Error::last_os_error()
            );
        }
        Ok(())
    }
}

/// Names of the current endpoint devices (`rpmsgN`, not `rpmsg_ctrlN`).
fn eptdevs() -> Result<Vec<String>> {
    let mut names = Vec::new();
    for entry in std::fs::read_dir("/sys/class/rpmsg").context("read /sys/class/rpmsg")? {
        let name = entry?.file_name().to_string_lossy().into_owned();
        if name.starts_with("rpmsg") && !name.starts_with("rpmsg_ctrl") {
            names.push(name);
        }
    }
    Ok(names)
}

/// The remote address of the announced channel `name` under `devices` (the rpmsg bus in sysfs),
/// from its `dst` attribute.
pub fn channel_addr(devices: &Path, name: &str) -> Result<u32> {
    let entries = std::fs::read_dir(devices)
        .with_context(|| format!("read {} (is rpmsg up?)", devices.display()))?;
    for entry in entries.filter_map(|e| e.ok()) {
        let dir = entry.path();
        let announced = std::fs::read_to_string(dir.join("name")).unwrap_or_default();
        if announced.trim() != name {
            continue;
        }
        let dst_path = dir.join("dst");
        let text = std::fs::read_to_string(&dst_path)
            .with_context(|| format!("read {}", dst_path.display()))?;
        return parse_addr(&text).with_context(|| {
            format!(
                "{}: '{}' is not an address",
                dst_path.display(),
                text.trim()
            )
        });
    }
    bail!(
        "no rpmsg channel named '{name}' under {} (has the MCU announced it?)",
        devices.display()
    )
}

/// An rpmsg address as sysfs prints it (`0x400`), or in decimal.
fn parse_addr(text: &str) -> Option<u32> {
    let text = text.trim();
    match text.strip_prefix("0x") {
        Some(hex) => u32::from_str_radix(hex, 16).ok(),
        None => text.parse().ok(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_channel_address_comes_from_the_announced_devices_dst() {
        let root = std::env::temp_dir().join(format!("qf-rpmsg-sysfs-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let device = |dir: &str, name: &str, dst: &str| {
            let d = root.join(dir);
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("name"), format!("{name}\n")).unwrap();
            std::fs::write(d.join("dst"), format!("{dst}\n")).unwrap();
        };
        device("virtio0.rpmsg_ctrl.0.0", "rpmsg_ctrl", "0xffffffff");
        assert!(channel_addr(&root, CHANNEL)
            .unwrap_err()
            .to_string()
            .contains("no rpmsg channel named 'qfabric'"));
        device("virtio0.qfabric.-1.1025", "qfabric", "0x401");
        assert_eq!(channel_addr(&root, CHANNEL).unwrap(), 0x401);
        device("virtio0.qfabric.-1.1025", "qfabric", "soon");
        assert!(channel_addr(&root, CHANNEL)
            .unwrap_err()
            .to_string()
            .contains("'soon' is not an address"));
        std::fs::remove_dir_all(&root).unwrap();
        assert_eq!(parse_addr("1024"), Some(1024));
    }
}
