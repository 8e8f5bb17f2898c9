//! Which QP types a device's transport offers, told before a QP is asked for: iWARP devices
//! have RC only, EFA (transport "unspecified": its own SRD beside UD) and Cisco's usNIC UD only,
//! InfiniBand and RoCE all three. A QP type the transport lacks is refused in one line naming
//! the device, its driver and the types it has, instead of the provider's bare EINVAL or
//! EOPNOTSUPP from `ibv_create_qp`.

use super::{Context, QpType};
use crate::error::Error;
use crate::sys;

const ALL: &[QpType] = &[QpType::Rc, QpType::Uc, QpType::Ud];

/// The QP types of transport `t` (an `ibv_transport_type`); an unknown transport is left to
/// the device to refuse.
pub fn offered(t: sys::ibv_transport_type) -> &'static [QpType] {
    match t {
        sys::IBV_TRANSPORT_IWARP => &[QpType::Rc],
        sys::IBV_TRANSPORT_UNSPECIFIED
        | sys::IBV_TRANSPORT_USNIC
        | sys::IBV_TRANSPORT_USNIC_UDP => &[QpType::Ud],
        _ => ALL,
    }
}

/// What transport `t` is called in a refusal.
fn transport_name(t: sys::ibv_transport_type) -> &'static str {
    match t {
        sys::IBV_TRANSPORT_IWARP => "iWARP",
        sys::IBV_TRANSPORT_UNSPECIFIED => "transport unspecified, as EFA's",
        sys::IBV_TRANSPORT_USNIC | sys::IBV_TRANSPORT_USNIC_UDP => "usNIC",
        _ => "InfiniBand/RoCE",
    }
}

/// The refusal of a `wanted` QP on `device` (kernel driver `driver`) of transport `t`.
pub fn refusal(device: &str, driver: &str, t: sys::ibv_transport_type, wanted: QpType) -> Error {
    let has: Vec<&str> = offered(t).iter().map(|q| q.name()).collect();
    let efa = if t == sys::IBV_TRANSPORT_UNSPECIFIED {
        " (EFA's SRD is not used by rdma-bench)"
    } else {
        ""
    };
    Error::config(format!(
        "{device} (driver {driver}, {}) has {} QPs only{efa}: no {} QP can be made on it; pick \
         another device, or a benchmark or tool that runs on {}",
        transport_name(t),
        has.join(" and "),
        wanted.name(),
        has.join(" or ")
    ))
}

impl Context {
    /// The device's transport (`ibv_transport_type`).
    pub fn transport(&self) -> sys::ibv_transport_type {
        // SAFETY: the context is open; its device and the transport field never change.
        unsafe { (*(*self.as_raw()).device).transport_type }
    }

    /// Whether the device's transport offers `t`; if not, the one-line refusal.
    pub fn check_qp_type(&self, t: QpType) -> Result<(), Error> {
        let transport = self.transport();
        if offered(transport).contains(&t) {
            return Ok(());
        }
        let driver = super::kernel_driver(std::path::Path::new(super::SYSFS_CLASS), self.name())
            .unwrap_or_else(|| "software".into());
        Err(refusal(self.name(), &driver, transport, t))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_transport_offers_its_qp_types() {
        assert_eq!(offered(sys::IBV_TRANSPORT_IB), ALL);
        assert_eq!(offered(sys::IBV_TRANSPORT_IWARP), &[QpType::Rc]);
        assert_eq!(offered(sys::IBV_TRANSPORT_UNSPECIFIED), &[QpType::Ud]);
        assert_eq!(offered(sys::IBV_TRANSPORT_USNIC_UDP), &[QpType::Ud]);
        assert_eq!(offered(sys::IBV_TRANSPORT_UNKNOWN), ALL);
    }

    #[test]
    fn an_efa_refusal_names_the_device_its_driver_and_what_it_has() {
        let e = refusal("efa_0", "efa", sys::IBV_TRANSPORT_UNSPECIFIED, QpType::Rc).to_string();
        assert_eq!(
            e,
            "efa_0 (driver efa, transport unspecified, as EFA's) has UD QPs only (EFA's SRD is \
             not used by rdma-bench): no RC QP can be made on it; pick another device, or a \
             benchmark or tool that runs on UD"
        );
        let e = refusal("siw0", "software", sys::IBV_TRANSPORT_IWARP, QpType::Ud).to_string();
        assert!(
            e.starts_with(
                "siw0 (driver software, iWARP) has RC QPs only: no UD QP can be made on it"
            ),
            "{e}"
        );
    }
}
