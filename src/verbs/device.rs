//! Device contexts, ports and GID tables.

use std::ffi::CStr;
use std::fmt;
use std::net::Ipv4Addr;
use std::ptr::NonNull;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::sys;

/// Where the kernel lists RDMA devices.
pub const SYSFS_CLASS: &str = "/sys/class/infiniband";

/// The kernel driver of device `name` under `class` (normally [`SYSFS_CLASS`]), as its
/// `device/driver` link names it: `mlx5_core`, `irdma`, `efa`; `None` for a software device
/// (rxe, siw: no bus device) or one that is not there. Device names can be renamed; drivers
/// cannot.
pub fn kernel_driver(class: &std::path::Path, name: &str) -> Option<String> {
    let link = std::fs::read_link(class.join(name).join("device/driver")).ok()?;
    Some(link.file_name()?.to_string_lossy().into_owned())
}

/// The word of a sysfs port state file's text (`4: ACTIVE` → `ACTIVE`, `5: ACTIVE_DEFER` →
/// `ACTIVE_DEFER`); empty when unreadable.
pub fn port_state_word(text: &[u8]) -> &str {
    std::str::from_utf8(text)
        .ok()
        .and_then(|s| s.split(':').nth(1))
        .map_or("", str::trim)
}

/// An open device (`ibv_context`). Closed when the last owner (PD, CQ, …) is gone.
pub struct Context {
    raw: NonNull<sys::ibv_context>,
    name: String,
}

// SAFETY: verbs contexts are thread-safe per the libibverbs documentation; we never hand out
// `&mut` to the C object.
unsafe impl Send for Context {}
// SAFETY: as above.
unsafe impl Sync for Context {}

/// Names of the RDMA devices on this host, in libibverbs' order.
pub fn devices() -> Result<Vec<String>> {
    with_device_list(|list| Ok(list.iter().map(|&d| device_name(d)).collect()))
}

/// Runs `f` over the device list, freeing the list afterwards on every path.
fn with_device_list<T>(f: impl FnOnce(&[*mut sys::ibv_device]) -> Result<T>) -> Result<T> {
    let mut n = 0;
    // SAFETY: ibv_get_device_list writes the count into `n` and returns a NULL-terminated array
    // we own until ibv_free_device_list.
    let list = unsafe { sys::ibv_get_device_list(&mut n) };
    if list.is_null() {
        return Err(Error::last_os("ibv_get_device_list"));
    }
    // SAFETY: the array holds `n` valid device pointers.
    let devs = unsafe { std::slice::from_raw_parts(list, n.max(0) as usize) };
    let out = f(devs);
    // SAFETY: `list` came from ibv_get_device_list; contexts opened from it stay valid after.
    unsafe { sys::ibv_free_device_list(list) };
    out
}

fn device_name(dev: *mut sys::ibv_device) -> String {
    // SAFETY: `dev` is a live entry of the device list; the name is a NUL-terminated C string.
    unsafe { CStr::from_ptr(sys::ibv_get_device_name(dev)) }
        .to_string_lossy()
        .into_owned()
}

/// The refusal of a device name that libibverbs does not list (`names`: what it lists).
pub(crate) fn unknown_device(name: &str, names: &[String]) -> Error {
    Error::config(format!(
        "no RDMA device named '{name}' (devices: {})",
        if names.is_empty() {
            "none".to_string()
        } else {
            names.join(", ")
        }
    ))
}

impl Context {
    /// Opens the device called `name` (as `ibv_devices` lists it).
    pub fn open(name: &str) -> Result<Arc<Context>> {
        with_device_list(|devs| {
            let dev = devs
                .iter()
                .copied()
                .find(|&d| device_name(d) == name)
                .ok_or_else(|| {
                    let names: Vec<String> = devs.iter().map(|&d| device_name(d)).collect();
                    unknown_device(name, &names)
                })?;
            Self::open_raw(dev)
        })
    }

    /// Opens the device of libhrd's `port_index`-th ACTIVE port, counting ports across all devices
    /// in order; returns the context and the port number on that device.
    pub fn open_port_index(port_index: usize) -> Result<(Arc<Context>, u8)> {
        with_device_list(|devs| {
            let mut seen = 0;
            // A device that does not open (a provider missing, a function being reset) or
            // answer has no ACTIVE port to count; the scan goes on, and names it if it ends
            // empty-handed.
            let mut failed = Vec::new();
            for &dev in devs {
                let ctx = match Self::open_raw(dev) {
                    Ok(c) => c,
                    Err(e) => {
                        failed.push(format!("{} ({e})", device_name(dev)));
                        continue;
                    }
                };
                let Ok(ports) = ctx.port_count() else {
                    failed.push(format!("{} (ibv_query_device failed)", ctx.name()));
                    continue;
                };
                for port in 1..=ports {
                    if ctx
                        .query_port(port)
                        .is_ok_and(|a| a.state == PortState::Active)
                    {
                        if seen == port_index {
                            return Ok((ctx, port));
                        }
                        seen += 1;
                    }
                }
            }
            let skipped = if failed.is_empty() {
                String::new()
            } else {
                format!("; skipped, not opening: {}", failed.join(", "))
            };
            Err(Error::config(if devs.is_empty() {
                "no RDMA device found (for a software one, see bench_scripts/softroce.sh)"
                    .to_string()
            } else {
                format!("port index {port_index} does not exist: {seen} ACTIVE port(s) across all devices{skipped}")
            }))
        })
    }

    /// The first ACTIVE port of any device.
    pub fn open_first_active() -> Result<(Arc<Context>, u8)> {
        Self::open_port_index(0)
    }

    fn open_raw(dev: *mut sys::ibv_device) -> Result<Arc<Context>> {
        let name = device_name(dev);
        // SAFETY: `dev` is a live entry of the device list.
        let raw = unsafe { sys::ibv_open_device(dev) };
        let raw = NonNull::new(raw).ok_or_else(|| Error::last_os("ibv_open_device"))?;
        Ok(Arc::new(Context { raw, name }))
    }

    /// The device's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Completion vectors (interrupt vectors a CQ's events may use).
    pub fn num_comp_vectors(&self) -> u32 {
        // SAFETY: the context is open; the field is set at open and never changes.
        unsafe { (*self.as_raw()).num_comp_vectors.max(0) as u32 }
    }

    /// The raw `ibv_context`.
    pub fn as_raw(&self) -> *mut sys::ibv_context {
        self.raw.as_ptr()
    }

    fn query_device(&self) -> Result<sys::ibv_device_attr> {
        let mut attr = sys::ibv_device_attr::default();
        // SAFETY: the context is open and `attr` is a valid out-pointer.
        let rc = unsafe { sys::ibv_query_device(self.as_raw(), &mut attr) };
        if rc != 0 {
            return Err(Error::verb("ibv_query_device", rc));
        }
        Ok(attr)
    }

    /// Whether the device executes RDMA atomics (`atomic_cap` is not `IBV_ATOMIC_NONE`).
    pub fn supports_atomics(&self) -> Result<bool> {
        Ok(self.query_device()?.atomic_cap != sys::IBV_ATOMIC_NONE)
    }

    /// Number of physical ports.
    pub fn port_count(&self) -> Result<u8> {
        Ok(self.query_device()?.phys_port_cnt)
    }

    /// Largest work-request count a queue may hold on this device.
    pub fn max_qp_wr(&self) -> Result<u32> {
        Ok(self.query_device()?.max_qp_wr as u32)
    }

    /// The QP limits the device reports: work requests per queue (`max_qp_wr`) and SGEs per
    /// WR (`max_sge`).
    pub fn qp_limits(&self) -> Result<(u32, u32)> {
        let d = self.query_device()?;
        Ok((d.max_qp_wr.max(0) as u32, d.max_sge.max(0) as u32))
    }

    /// RDMA READs / atomics a QP of this device may have in flight as responder or initiator
    /// (`max_qp_rd_atom`).
    pub fn max_qp_rd_atom(&self) -> Result<u32> {
        Ok(self.query_device()?.max_qp_rd_atom.max(0) as u32)
    }

    /// RECVs one shared receive queue of this device may hold (`max_srq_wr`; 0: no SRQs).
    pub fn max_srq_wr(&self) -> Result<u32> {
        let a = self.query_device()?;
        Ok(if a.max_srq > 0 {
            a.max_srq_wr.max(0) as u32
        } else {
            0
        })
    }

    /// RDMA READs / atomics a QP of this device may initiate in flight
    /// (`max_qp_init_rd_atom`).
    pub fn max_qp_init_rd_atom(&self) -> Result<u32> {
        Ok(self.query_device()?.max_qp_init_rd_atom.max(0) as u32)
    }

    /// PCI vendor id and vendor part id (Soft-RoCE reports 0xFFFFFF and 0).
    pub fn vendor_ids(&self) -> Result<(u32, u32)> {
        let a = self.query_device()?;
        Ok((a.vendor_id, a.vendor_part_id))
    }

    /// Port attributes.
    pub fn query_port(&self, port: u8) -> Result<PortAttr> {
        let mut attr = sys::ibv_port_attr::default();
        // SAFETY: the context is open and `attr` is a valid out-pointer.
        let rc = unsafe { sys::shim_query_port(self.as_raw(), port, &mut attr) };
        if rc != 0 {
            let errno = if rc > 0 { rc } else { libc::EINVAL };
            return Err(Error::verb("ibv_query_port", errno));
        }
        Ok(PortAttr {
            state: PortState::from_raw(attr.state),
            active_mtu: attr.active_mtu,
            max_mtu: attr.max_mtu,
            lid: attr.lid,
            link_layer: LinkLayer::from_raw(attr.link_layer, attr.lid),
            gid_tbl_len: attr.gid_tbl_len.max(0) as u32,
            pkey_tbl_len: attr.pkey_tbl_len,
            phys_state: attr.phys_state,
            sm_lid: attr.sm_lid,
            active_width: attr.active_width,
            active_speed: attr.active_speed,
        })
    }

    /// The firmware version the device reports (`ibv_device_attr.fw_ver`; empty if none).
    pub fn fw_version(&self) -> Result<String> {
        let attr = self.query_device()?;
        let bytes: Vec<u8> = attr
            .fw_ver
            .iter()
            .take_while(|&&c| c != 0)
            .map(|&c| c as u8)
            .collect();
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }

    /// Entry `index` of a port's GID table.
    pub fn gid(&self, port: u8, index: u32) -> Result<Gid> {
        let mut gid = sys::ibv_gid::default();
        // SAFETY: the context is open and `gid` is a valid out-pointer.
        let rc = unsafe { sys::ibv_query_gid(self.as_raw(), port, index as i32, &mut gid) };
        if rc != 0 {
            return Err(Error::last_os("ibv_query_gid"));
        }
        // SAFETY: `raw` is the byte view of the 16-byte union.
        Ok(Gid(unsafe { gid.raw }))
    }

    /// The GID type of a port's GID entry, named as the kernel's sysfs names it ("IB/RoCE v1",
    /// "RoCE v2"), if the entry is valid: from `ibv_query_gid_ex` in a build against rdma-core ≥
    /// v32 ([`crate::build_info::QUERY_GID_EX`]), else from sysfs ([`Context::gid_type_from_sysfs`]).
    pub fn gid_type(&self, port: u8, index: u32) -> Option<String> {
        #[cfg(has_query_gid_ex)]
        return self.gid_type_ex(port, index).map(str::to_string);
        #[cfg(not(has_query_gid_ex))]
        return self.gid_type_from_sysfs(port, index);
    }

    /// `ibv_query_gid_ex`'s type of the entry (rdma-core itself falls back to sysfs on kernels
    /// without the ioctl).
    #[cfg(has_query_gid_ex)]
    fn gid_type_ex(&self, port: u8, index: u32) -> Option<&'static str> {
        let mut entry = sys::ibv_gid_entry::default();
        // SAFETY: the context is open and `entry` is a valid out-pointer of the size the shim
        // passes along (its own sizeof, from the same headers).
        let rc = unsafe { sys::shim_query_gid_ex(self.as_raw(), port.into(), index, &mut entry) };
        if rc != 0 {
            return None;
        }
        match entry.gid_type {
            sys::IBV_GID_TYPE_IB | sys::IBV_GID_TYPE_ROCE_V1 => Some("IB/RoCE v1"),
            sys::IBV_GID_TYPE_ROCE_V2 => Some("RoCE v2"),
            _ => None,
        }
    }

    /// The GID type as the kernel reports it in sysfs (`ports/N/gid_attrs/types/I`), if it does.
    pub fn gid_type_from_sysfs(&self, port: u8, index: u32) -> Option<String> {
        self.gid_attr(port, "types", index)
    }

    /// The netdev a GID entry belongs to (sysfs `ports/N/gid_attrs/ndevs/I`), on RoCE.
    pub fn gid_netdev(&self, port: u8, index: u32) -> Option<String> {
        self.gid_attr(port, "ndevs", index)
    }

    /// One of a GID entry's attributes in sysfs (`ports/N/gid_attrs/ATTR/I`), trimmed.
    fn gid_attr(&self, port: u8, attr: &str, index: u32) -> Option<String> {
        let path = format!(
            "/sys/class/infiniband/{}/ports/{port}/gid_attrs/{attr}/{index}",
            self.name
        );
        std::fs::read_to_string(path)
            .ok()
            .map(|s| s.trim().to_string())
    }

    /// Index of the port's RoCE v2 GID that maps an IPv4 address, if any.
    pub fn roce_v2_ipv4_gid(&self, port: u8, table_len: u32) -> Option<u32> {
        (0..table_len).find(|&i| {
            self.gid(port, i).is_ok_and(|g| g.ipv4().is_some())
                && self.gid_type(port, i).as_deref() == Some("RoCE v2")
        })
    }
}

impl Drop for Context {
    fn drop(&mut self) {
        // SAFETY: every object made from this context holds an Arc to it, so none is left.
        unsafe { sys::ibv_close_device(self.raw.as_ptr()) };
    }
}

impl fmt::Debug for Context {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Context").field("name", &self.name).finish()
    }
}

/// Logical port state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PortState {
    /// `IBV_PORT_ACTIVE`: ready to carry traffic.
    Active,
    /// Anything else (DOWN, INIT, ARMED, …), with the raw value.
    Other(u32),
}

impl PortState {
    fn from_raw(v: u32) -> Self {
        if v == sys::ibv_port_state::IBV_PORT_ACTIVE {
            PortState::Active
        } else {
            PortState::Other(v)
        }
    }
}

impl fmt::Display for PortState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PortState::Active => f.write_str("ACTIVE"),
            PortState::Other(1) => f.write_str("DOWN"),
            PortState::Other(2) => f.write_str("INIT"),
            PortState::Other(3) => f.write_str("ARMED"),
            PortState::Other(v) => write!(f, "state {v}"),
        }
    }
}

/// The port's link layer, which decides LID or GID addressing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkLayer {
    /// InfiniBand: address by LID.
    InfiniBand,
    /// Ethernet (RoCE, or iWARP): address by GID, with a GRH.
    Ethernet,
    /// Unspecified by the provider, on a port without a LID: EFA's SRD fabric, whose peers
    /// are addressed by GID with a GRH, though it is neither InfiniBand nor RoCE.
    Unspecified,
}

impl LinkLayer {
    /// From `ibv_port_attr.link_layer` and the port's LID. Providers older than RoCE leave the
    /// field unspecified (0) on InfiniBand ports, which have a LID once a subnet manager has
    /// configured them; a port that leaves it unspecified and has no LID (EFA) is reached by
    /// GID, so treating it as InfiniBand (LID 0, no GRH) would address nobody.
    pub fn from_raw(link_layer: u8, lid: u16) -> LinkLayer {
        match u32::from(link_layer) {
            sys::IBV_LINK_LAYER_ETHERNET => LinkLayer::Ethernet,
            sys::IBV_LINK_LAYER_UNSPECIFIED if lid == 0 => LinkLayer::Unspecified,
            _ => LinkLayer::InfiniBand,
        }
    }
}

/// What `ibv_query_port` says, in the parts we use.
#[derive(Debug, Clone, Copy)]
pub struct PortAttr {
    /// Logical state.
    pub state: PortState,
    /// Active MTU (`ibv_mtu` enum value: 1 = 256 … 5 = 4096).
    pub active_mtu: u32,
    /// Largest supported MTU (`ibv_mtu` enum value).
    pub max_mtu: u32,
    /// LID (0 on RoCE).
    pub lid: u16,
    /// Link layer.
    pub link_layer: LinkLayer,
    /// Entries in the GID table.
    pub gid_tbl_len: u32,
    /// Entries in the P_Key table.
    pub pkey_tbl_len: u16,
    /// Physical state (`ibv_port_attr.phys_state`: 5 = LinkUp, 3 = Disabled, 2 = Polling, …).
    pub phys_state: u8,
    /// The subnet manager's LID (InfiniBand).
    pub sm_lid: u16,
    /// Active link width (`1` = 1x, `2` = 4x, `4` = 8x, `8` = 12x, `16` = 2x).
    pub active_width: u8,
    /// Active per-lane speed code (`1` = 2.5 Gb/s … `128` = 100 Gb/s; see [`PortAttr::gbps`]).
    pub active_speed: u8,
}

impl PortAttr {
    /// Lanes of the active width, if the code is known.
    pub fn lanes(&self) -> Option<u32> {
        match self.active_width {
            1 => Some(1),
            2 => Some(4),
            4 => Some(8),
            8 => Some(12),
            16 => Some(2),
            _ => None,
        }
    }

    /// Nominal per-lane rate in Gb/s of the active speed (as ibv_devinfo prints it: FDR10 and
    /// QDR both say 10), if the code is known.
    pub fn lane_gbps(&self) -> Option<f64> {
        match self.active_speed {
            1 => Some(2.5),
            2 => Some(5.0),
            4 | 8 => Some(10.0),
            16 => Some(14.0),
            32 => Some(25.0),
            64 => Some(50.0),
            128 => Some(100.0),
            _ => None,
        }
    }

    /// Link rate in Gb/s (lanes × lane rate), if both codes are known.
    pub fn gbps(&self) -> Option<f64> {
        Some(f64::from(self.lanes()?) * self.lane_gbps()?)
    }

    /// The physical state's name.
    pub fn phys_state_name(&self) -> &'static str {
        match self.phys_state {
            1 => "Sleep",
            2 => "Polling",
            3 => "Disabled",
            4 => "PortConfigurationTraining",
            5 => "LinkUp",
            6 => "LinkErrorRecovery",
            7 => "PhyTest",
            _ => "unknown",
        }
    }
}

/// A 16-byte GID.
#[derive(Clone, Copy, Default, PartialEq, Eq)]
pub struct Gid(pub [u8; 16]);

impl Gid {
    /// The IPv4 address of an IPv4-mapped GID (`::ffff:a.b.c.d`).
    pub fn ipv4(&self) -> Option<Ipv4Addr> {
        let g = &self.0;
        (g[..10].iter().all(|&b| b == 0) && g[10] == 0xff && g[11] == 0xff)
            .then(|| Ipv4Addr::new(g[12], g[13], g[14], g[15]))
    }

    /// A multicast group: an IPv6 multicast address (ff…), or an IPv4-mapped one in 224/4.
    pub fn is_multicast(&self) -> bool {
        self.0[0] == 0xff || self.ipv4().is_some_and(|a| a.is_multicast())
    }
}

impl fmt::Display for Gid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.ipv4() {
            Some(ip) => write!(f, "::ffff:{ip}"),
            None => {
                for (i, pair) in self.0.chunks(2).enumerate() {
                    if i > 0 {
                        f.write_str(":")?;
                    }
                    write!(f, "{:02x}{:02x}", pair[0], pair[1])?;
                }
                Ok(())
            }
        }
    }
}

impl fmt::Debug for Gid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unspecified_link_layer_without_a_lid_is_reached_by_gid() {
        let raw = |l: u32| l as u8;
        let ll = |l, lid| LinkLayer::from_raw(raw(l), lid);
        assert_eq!(ll(sys::IBV_LINK_LAYER_ETHERNET, 0), LinkLayer::Ethernet);
        assert_eq!(ll(sys::IBV_LINK_LAYER_INFINIBAND, 7), LinkLayer::InfiniBand);
        // An old InfiniBand provider leaves the field unspecified; its port has a LID.
        assert_eq!(
            ll(sys::IBV_LINK_LAYER_UNSPECIFIED, 7),
            LinkLayer::InfiniBand
        );
        // EFA: unspecified, and no LID.
        assert_eq!(
            ll(sys::IBV_LINK_LAYER_UNSPECIFIED, 0),
            LinkLayer::Unspecified
        );
    }

    #[test]
    fn ipv4_mapped_gid_prints_as_address() {
        let mut g = [0u8; 16];
        g[10] = 0xff;
        g[11] = 0xff;
        g[12..].copy_from_slice(&[192, 0, 2, 1]);
        assert_eq!(Gid(g).ipv4(), Some(Ipv4Addr::new(192, 0, 2, 1)));
        assert_eq!(Gid(g).to_string(), "::ffff:192.0.2.1");
    }

    #[test]
    fn link_local_gid_prints_in_full() {
        let mut g = [0u8; 16];
        g[0] = 0xfe;
        g[1] = 0x80;
        g[15] = 1;
        assert_eq!(Gid(g).ipv4(), None);
        assert_eq!(
            Gid(g).to_string(),
            "fe80:0000:0000:0000:0000:0000:0000:0001"
        );
    }
}
