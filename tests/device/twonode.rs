//! Two Soft-RoCE guests on one virtual Ethernet (`softroce.sh run --nodes 2`): both nodes run
//! the same test at the same time, one test at a time.

mod apps;
mod faults;
mod qos;
