//! Address handles for UD.

use std::ptr::NonNull;
use std::sync::Arc;

use super::{PathQos, Port, ProtectionDomain, QpInfo, WorkCompletion};
use crate::error::{Error, Result};
use crate::sys;

const _: () = assert!(std::mem::size_of::<sys::ibv_grh>() == 40);

/// An `ibv_ah`: how to reach one UD peer (LID on InfiniBand, GID with GRH on RoCE). Shared as an
/// `Arc`: a UD QP that posts a SEND through it keeps a clone until the QP is destroyed.
#[derive(Debug)]
pub struct AddressHandle {
    raw: NonNull<sys::ibv_ah>,
    _pd: Arc<ProtectionDomain>,
}

// SAFETY: an AH is immutable after creation.
unsafe impl Send for AddressHandle {}
// SAFETY: as above.
unsafe impl Sync for AddressHandle {}

impl AddressHandle {
    /// An AH from `port` to the peer described by `remote`.
    pub fn new(
        pd: &Arc<ProtectionDomain>,
        port: &Port,
        remote: &QpInfo,
    ) -> Result<Arc<AddressHandle>> {
        let mut attr = address_vector(port, port.qos(), remote);
        // SAFETY: the PD is alive and `attr` is fully initialised.
        let raw = unsafe { sys::ibv_create_ah(pd.as_raw(), &mut attr) };
        let raw = NonNull::new(raw).ok_or_else(|| Error::last_os("ibv_create_ah"))?;
        Ok(Arc::new(AddressHandle {
            raw,
            _pd: Arc::clone(pd),
        }))
    }

    /// An AH from an address vector computed elsewhere (the RDMA CM's path to a UD peer).
    #[cfg(has_rdmacm)]
    pub(crate) fn from_attr(
        pd: &Arc<ProtectionDomain>,
        mut attr: sys::ibv_ah_attr,
    ) -> Result<Arc<AddressHandle>> {
        // SAFETY: the PD is alive and `attr` is fully initialised.
        let raw = unsafe { sys::ibv_create_ah(pd.as_raw(), &mut attr) };
        let raw = NonNull::new(raw).ok_or_else(|| Error::last_os("ibv_create_ah"))?;
        Ok(Arc::new(AddressHandle {
            raw,
            _pd: Arc::clone(pd),
        }))
    }

    /// An AH back to the sender of a UD receive completion `wc` (`ibv_create_ah_from_wc`):
    /// `grh` is a copy of the 40 bytes the receive buffer started with (the GRH, or on RoCE v2
    /// over IPv4 the IPv4 header in its last 20 bytes).
    pub fn reply_to(
        pd: &Arc<ProtectionDomain>,
        port: &Port,
        wc: &WorkCompletion,
        grh: &[u8; 40],
    ) -> Result<Arc<AddressHandle>> {
        let mut wc_copy = *wc.as_raw();
        // SAFETY: `ibv_grh` is 40 plain bytes (no padding, any bit pattern valid).
        let mut grh_copy: sys::ibv_grh = unsafe { std::mem::transmute_copy(grh) };
        // SAFETY: the PD is alive; the wc and GRH are local copies, only read during the call.
        let raw = unsafe {
            sys::ibv_create_ah_from_wc(pd.as_raw(), &mut wc_copy, &mut grh_copy, port.num())
        };
        let raw = NonNull::new(raw).ok_or_else(|| Error::last_os("ibv_create_ah_from_wc"))?;
        Ok(Arc::new(AddressHandle {
            raw,
            _pd: Arc::clone(pd),
        }))
    }

    /// The protection domain it was made in.
    pub fn pd(&self) -> &Arc<ProtectionDomain> {
        &self._pd
    }

    /// The raw `ibv_ah`.
    pub fn as_raw(&self) -> *mut sys::ibv_ah {
        self.raw.as_ptr()
    }
}

impl Drop for AddressHandle {
    fn drop(&mut self) {
        // SAFETY: `raw` is a live AH; every QP that posted a WR through it holds an Arc to it until
        // after ibv_destroy_qp, so no WR references it any more.
        unsafe { sys::ibv_destroy_ah(self.raw.as_ptr()) };
    }
}

/// The address vector used by both AHs and RC/UC RTR: GRH on RoCE, LID on InfiniBand; the
/// QoS fields `qos` in either.
pub(crate) fn address_vector(port: &Port, qos: PathQos, remote: &QpInfo) -> sys::ibv_ah_attr {
    let mut attr = sys::ibv_ah_attr {
        port_num: port.num(),
        sl: qos.sl,
        ..Default::default()
    };
    if port.addressed_by_gid() {
        attr.is_global = 1;
        attr.grh.dgid.raw = remote.gid;
        attr.grh.sgid_index = port.gid_index() as u8;
        attr.grh.hop_limit = qos.hop_limit;
        attr.grh.traffic_class = qos.traffic_class;
        attr.grh.flow_label = qos.flow_label;
    } else {
        attr.dlid = remote.lid;
    }
    attr
}
