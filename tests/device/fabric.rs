//! Fabric conditions that change the guest they run in (addresses, hugepages, a second
//! provider): `softroce.sh run --numa --siw`, one test at a time.

mod no_ipv4;
mod numa;
mod siw;
mod two_devices;
