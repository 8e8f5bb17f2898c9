//! Three Soft-RoCE guests with sshd (`softroce.sh run --nodes 3 --sshd`): every node runs the
//! same test at the same time, one test at a time.

mod fleet;
mod swarm;
