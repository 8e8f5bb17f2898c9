//! perftest's exchange channel under `-R`: an RC QP connected through RDMA CM on the test's port,
//! carrying each message as one SEND of exactly its size (at most 56 bytes), one RECV always
//! posted and reposted before the reply, as perftest's rdma_write_data / rdma_read_data do.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::channel::{Wait, SETUP_TIMEOUT};
use crate::control::Attention;
use crate::error::{Error, Result};
use crate::hot::{poll_one, PollTimeout, RecvBatch, SendBatch, SendSpec};
use crate::mem::{HugePolicy, Placement};
use crate::verbs::cm::{CmId, CmParams};
use crate::verbs::{
    Access, Context, MemoryRegion, Op, Port, QpCaps, QpSpec, QpType, QueuePair, Resources,
    WorkCompletion,
};

/// perftest posts RECVs of `sizeof(struct pingpong_dest)`: no message is longer.
pub const MAX_MESSAGE: usize = 56;
/// Where received messages land in the link's buffer (sends go out from offset 0).
const RECV_OFFSET: usize = 2048;
/// The comm connection's parameters (perftest's): no READs, 7 retries, RNR forever.
const COMM_PARAMS: CmParams = CmParams {
    responder_resources: 0,
    initiator_depth: 0,
    retry_count: 7,
    rnr_retry_count: 7,
};

/// The connected exchange QP.
pub struct CmLink {
    /// The connection (the QP is ours, not the CM's, so the two drop in any order).
    id: CmId,
    qp: QueuePair,
    mr: Arc<MemoryRegion>,
    recv: RecvBatch,
    /// One prebuilt SEND per message size used so far.
    sends: Vec<(usize, SendBatch)>,
}

impl CmLink {
    fn build(port: &Port) -> Result<(QueuePair, Arc<MemoryRegion>, RecvBatch)> {
        let res = Resources::new(port)?;
        let send_cq = res.cq(1)?;
        let recv_cq = res.cq(1)?;
        let caps = QpCaps {
            max_send_wr: 1,
            max_recv_wr: 1,
            max_send_sge: 1,
            max_recv_sge: 1,
            max_inline_data: 0,
        };
        let mut qp = res.qp_on(QpSpec::new(QpType::Rc, caps), &send_cq, &recv_cq)?;
        let place = Placement {
            huge: HugePolicy::Off,
            numa_node: None,
        };
        let mr = res.region(4096, place, Access::LOCAL_WRITE)?;
        let mut recv = RecvBatch::new(&mut qp, &mr, 1, MAX_MESSAGE as u32, RECV_OFFSET, 0)?;
        // Before connecting: the peer's first message may follow the handshake at once.
        recv.post(&mut qp, 1)?;
        Ok((qp, mr, recv))
    }

    /// The port the CM bound `id` to, opened as ours.
    fn port_of(id: &CmId, gid_index: Option<u32>) -> Result<Port> {
        let ctx = Context::open(&id.device_name()?)?;
        Port::open(&ctx, id.port_num(), gid_index)
    }

    /// Client: connects from `source` (when given) to the server's CM listener at `server`,
    /// retrying a rejection (the
    /// server not listening yet) until `timeout`, in traffic class `tos` if given. Returns the
    /// link and the port the route uses.
    pub fn connect(
        source: Option<IpAddr>,
        server: SocketAddr,
        gid_index: Option<u32>,
        tos: Option<u8>,
        timeout: Duration,
        attention: Attention,
    ) -> Result<(CmLink, Port)> {
        let start = Instant::now();
        loop {
            let mut id = CmId::resolve_from(source, server, tos, attention)?;
            let port = Self::port_of(&id, gid_index)?;
            let (mut qp, mr, recv) = Self::build(&port)?;
            match id.connect(&mut qp, COMM_PARAMS, SETUP_TIMEOUT) {
                Ok(()) => {
                    let link = CmLink {
                        id,
                        qp,
                        mr,
                        recv,
                        sends: Vec::new(),
                    };
                    return Ok((link, port));
                }
                Err(Error::Config(_))
                    if start.elapsed() < timeout && !attention.stop_requested() =>
                {
                    std::thread::sleep(Duration::from_millis(100));
                }
                Err(Error::Config(why)) => {
                    return Err(Error::Timeout {
                        what: format!("no RDMA CM server answered at {server} ({why})"),
                        after: timeout,
                        hint: Some("start the server side first, with the same -p and -R"),
                    })
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Server: waits for one client on `port` of `at` (every address of its family when it is
    /// the unspecified one; until a stop request) and accepts it. Returns the
    /// link and the port the connection uses. The listener is gone when this returns, so that
    /// the test's own listener may take the port.
    pub fn accept(
        at: IpAddr,
        port_num: u16,
        gid_index: Option<u32>,
        attention: Attention,
    ) -> Result<(CmLink, Port)> {
        let listener = CmId::listen_on(at, port_num, 1, attention)?;
        let mut id = listener.next_request(None)?;
        drop(listener);
        let port = Self::port_of(&id, gid_index)?;
        let (mut qp, mr, recv) = Self::build(&port)?;
        id.accept(&mut qp, COMM_PARAMS, SETUP_TIMEOUT)?;
        Ok((
            CmLink {
                id,
                qp,
                mr,
                recv,
                sends: Vec::new(),
            },
            port,
        ))
    }

    /// The run's attention, as the link was made with.
    pub fn attention(&self) -> Attention {
        self.id.attention()
    }

    /// Sends one message.
    pub fn send(&mut self, msg: &[u8]) -> Result<()> {
        if msg.len() > MAX_MESSAGE || msg.is_empty() {
            return Err(Error::Protocol(format!(
                "a {}-byte message does not fit perftest's RDMA CM exchange",
                msg.len()
            )));
        }
        let i = match self.sends.iter().position(|(n, _)| *n == msg.len()) {
            Some(i) => i,
            None => {
                let spec = SendSpec {
                    op: Op::Send,
                    postlist: 1,
                    size: msg.len() as u32,
                    stride: 0,
                    local_offset: 0,
                    remote_offset: 0,
                    inline: false,
                };
                let mut b = SendBatch::new(&mut self.qp, &self.mr, spec, None)?;
                b.set_signaled(0, true);
                self.sends.push((msg.len(), b));
                self.sends.len() - 1
            }
        };
        self.mr.write(0, msg);
        self.sends[i].1.post(&mut self.qp)?;
        poll_one(self.qp.send_cq(), PollTimeout::new(self.attention())).map(|_| ())
    }

    /// Receives one message into `buf` (its length is the message's), then reposts the RECV.
    pub fn recv(&mut self, buf: &mut [u8], wait: Wait) -> Result<()> {
        let start = Instant::now();
        let mut wc = [WorkCompletion::default()];
        let cq = Arc::clone(self.qp.recv_cq());
        let mut empty: u32 = 0;
        let mut stopped = None;
        loop {
            if cq.poll(&mut wc)? == 1 {
                wc[0].result()?;
                break;
            }
            empty = empty.wrapping_add(1);
            if empty.is_multiple_of(4096) {
                if self.attention().stop_requested() && !wait.in_stop_grace(&mut stopped) {
                    return Err(Error::Stopped("stopped while waiting for the peer".into()));
                }
                if self.id.peer_disconnected() {
                    return Err(Error::PeerLost {
                        peer: "the RDMA CM peer".into(),
                        what: "it disconnected the exchange connection".into(),
                    });
                }
                if matches!(wait, Wait::Setup) && start.elapsed() > SETUP_TIMEOUT {
                    return Err(Error::timeout(
                        "no answer on the RDMA CM exchange".to_string(),
                        SETUP_TIMEOUT,
                        Some("the peer is stuck, or runs another test"),
                    ));
                }
            }
            // A peer in the middle of its test answers in seconds: stop spinning a CPU it uses.
            if matches!(wait, Wait::Test) && empty > 64 {
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        self.mr.read(RECV_OFFSET, buf);
        self.recv.post(&mut self.qp, 1)
    }
}
