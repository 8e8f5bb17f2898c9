//! One rc-swarm worker thread: its buffer and N·M QPs, the meeting with its namesakes at the
//! other processes, and the loop.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::swarm::{done_name, peer_qp_name, qp_name, Swarm};
use super::{Args, BUF_SIZE};
use crate::error::{Error, Result};
use crate::framework::{hello_all, peer_lost, Hello, Meter, Plan, Role, ThreadCtx};
use crate::hot::{
    poll_one, Op, PollTimeout, Postlist, RecvBatch, Remote, SendBatch, SendSpec, UnsignaledCounter,
    WaitClock,
};
use crate::registry::{Meeting, PeerWatch};
use crate::stats::RunInfo;
use crate::verbs::{
    Access, ConnectParams, MemoryRegion, QpCaps, QpSpec, QpType, QueuePair, Resources,
};

/// A connected QP and what posting on it needs.
struct Target {
    qp: QueuePair,
    batch: SendBatch,
    counter: UnsignaledCounter,
    /// The process at the other end.
    process: usize,
    /// Its QP's name, for errors.
    peer: String,
}

/// A thread's QPs once connected.
pub(super) struct Connected {
    targets: Vec<Target>,
    /// The QPs made for our own process: never connected, kept for the count (as the original).
    _idle: Vec<QueuePair>,
    mr: Arc<MemoryRegion>,
    /// One per other process, while we post at it.
    _watches: Vec<PeerWatch>,
}

/// This process's worker threads: each connects, runs the loop and stops with the swarm. A
/// thread that fails keeps its process from saying it is done.
pub(super) struct Workers<'a> {
    pub a: &'a Args,
    pub swarm: &'a Swarm,
}

impl Role for Workers<'_> {
    type Thread = Connected;

    fn plan(&self) -> Plan {
        let a = self.a;
        let info = RunInfo {
            bench: super::BENCH.name,
            role: "Worker",
            op: if a.do_read { "READ" } else { "WRITE" },
            size: a.size,
            postlist: 1,
            first_id: self.swarm.rank.process_id * a.num_threads,
            json: a.common.json,
        };
        Plan::counting(info, a.num_threads).quiet()
    }

    fn setup(&self, ctx: &ThreadCtx<'_>) -> Result<Connected> {
        connect(self.a, self.swarm, ctx).inspect_err(|_| self.swarm.fail())
    }

    fn measure(&self, c: &mut Connected, m: &mut Meter<'_>) -> Result<()> {
        run_loop(self.a, self.swarm, m, c).inspect_err(|_| self.swarm.fail())
    }
}

fn connect(a: &Args, swarm: &Swarm, ctx: &ThreadCtx<'_>) -> Result<Connected> {
    let t = ctx.t;
    let (p, n) = (swarm.rank.process_id, swarm.rank.num_processes);
    let port = ctx.open_port(a.common.port_index + t % a.num_ports)?;
    let max_rd = port.context().max_qp_rd_atom()?;
    if u32::from(a.max_rd_atomic) > max_rd {
        return Err(Error::config(format!(
            "max-rd-atomic {} is above this device's max_qp_rd_atom ({max_rd})",
            a.max_rd_atomic
        )));
    }
    let res = Resources::new(&port)?;
    let access = Access::LOCAL_WRITE | Access::REMOTE_READ | Access::REMOTE_WRITE;
    let mr = res.region(BUF_SIZE, a.common.placement(), access)?;
    // READs land in the zeroed polling region; everything a READ fetches is non-zero.
    mr.fill(1);
    mr.write(0, &vec![0; a.polling_region()]);
    let caps = QpCaps {
        max_send_wr: a.sq_depth,
        max_recv_wr: 1,
        max_send_sge: 1,
        max_recv_sge: 1,
        max_inline_data: a.max_inline,
    };
    let mut conn = Vec::new();
    let mut idle = Vec::new();
    let mut meetings = Vec::new();
    for i in 0..a.qps_per_thread(&swarm.rank) {
        let qp_type = if a.use_uc { QpType::Uc } else { QpType::Rc };
        let mut qp = res.qp(QpSpec::new(qp_type, caps))?;
        if i % n == p {
            idle.push(qp);
            continue;
        }
        meetings.push(Meeting {
            me: qp_name(p, t, i, n),
            peer: peer_qp_name(p, t, i, n),
            info: qp.info(Some(&mr)),
        });
        let hello_recv = RecvBatch::new(&mut qp, &mr, 1, 0, 0, 0)?;
        conn.push((qp, hello_recv, i % n));
    }
    let params = ConnectParams {
        max_rd_atomic: a.max_rd_atomic,
        max_dest_rd_atomic: a.max_rd_atomic,
        timeout: conn
            .first()
            .map_or(ConnectParams::default().timeout, |(qp, ..)| {
                qp.port().ack_timeout()
            }),
        ..ConnectParams::default()
    };
    let reg = swarm.registry();
    let remotes = reg.rendezvous_all(&meetings, ctx.wait(), |k, remote| {
        let (qp, recv, _) = &mut conn[k];
        qp.connect_with(remote, &params)?;
        // Before we say "ready": the peer's hello may follow at once.
        recv.post(qp, 1)
    })?;
    {
        let mut hellos: Vec<Hello<'_>> = conn
            .iter_mut()
            .zip(&meetings)
            .zip(&remotes)
            .map(|(((qp, _, _), m), remote)| Hello {
                qp,
                peer: &m.peer,
                remote,
            })
            .collect();
        hello_all(&mut hellos, &mr, reg.run_id(), ctx.wait())?;
    }
    let mut watches = Vec::new();
    let mut targets = Vec::with_capacity(conn.len());
    let spec = SendSpec {
        op: if a.do_read { Op::Read } else { Op::Write },
        postlist: 1,
        size: a.size as u32,
        stride: 0,
        local_offset: 0,
        remote_offset: 0,
        inline: !a.do_read,
    };
    for (((mut qp, _, process), m), remote) in conn.into_iter().zip(meetings).zip(remotes) {
        if !swarm.knows(process) {
            watches.push(reg.watch(&m.peer, remote.run_id, &done_name(process)));
        }
        swarm.learn_run(process, remote.run_id);
        let mut batch = SendBatch::new(&mut qp, &mr, spec, Some(Remote::of(&remote.info)))?;
        if a.allsig {
            batch.set_signaled(0, true);
        }
        targets.push(Target {
            qp,
            batch,
            counter: UnsignaledCounter::new(a.unsig_batch),
            process,
            peer: m.peer,
        });
    }
    swarm.connected[t].store(targets.len(), Ordering::Relaxed);
    println!(
        "main: Worker {} connected {} QPs",
        p * a.num_threads + t,
        targets.len()
    );
    Ok(Connected {
        targets,
        _idle: idle,
        mr,
        _watches: watches,
    })
}

/// libhrd's hrd_fastrand: the high half of a 64-bit LCG.
#[inline(always)]
fn fastrand(seed: &mut u64) -> u32 {
    *seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12_345);
    (*seed >> 32) as u32
}

/// A random cache-line-aligned remote offset outside the peer's polling region, with room for
/// `size` bytes (the original's rule).
#[inline(always)]
fn remote_offset(seed: &mut u64, polling: usize, size: usize) -> u64 {
    loop {
        let off = (fastrand(seed) as usize % BUF_SIZE).next_multiple_of(64);
        if off > polling && off < BUF_SIZE - size {
            return off as u64;
        }
    }
}

fn run_loop(a: &Args, swarm: &Swarm, m: &mut Meter<'_>, c: &mut Connected) -> Result<()> {
    let t = m.thread();
    let Connected { targets, mr, .. } = c;
    let window = a.window_size;
    let size = a.size as usize;
    let polling = a.polling_region();
    let timeout = m.poll_timeout();
    // Which target each window slot's operation went to, and how many signaled ones are out.
    let mut ring = vec![0usize; window];
    let mut outstanding = 0usize;
    let (mut ops, mut wi) = (0u64, 0usize);
    let gid = swarm.rank.process_id * a.num_threads + t;
    let mut seed = 0xdead_beef_u64 ^ (gid as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    let limit = a.common.op_limit();
    m.start();
    // The operation that failed, if any: (target, error).
    let mut failure: Option<(usize, Error)> = None;
    'run: while m.checkpoint() && ops < limit {
        if ops >= window as u64 {
            if a.allsig {
                let k = ring[wi];
                if let Err(e) = poll_one(targets[k].qp.send_cq(), timeout) {
                    failure = Some((k, e));
                    break;
                }
                outstanding -= 1;
            }
            if a.do_read {
                let slot = wi * size;
                let mut spins = 0u32;
                let mut clock = WaitClock::default();
                while mr.load_u8(slot) == 0 {
                    spins = spins.wrapping_add(1);
                    if spins.is_multiple_of(4096) {
                        if !m.checkpoint() {
                            break 'run;
                        }
                        // A READ that failed never fills its slot (unsignaled, its error
                        // completion is not polled here): bound the wait as a CQ poll is.
                        if clock.look(timeout.limit) > timeout.limit {
                            let e = Error::timeout(
                                "a READ's data never arrived".to_string(),
                                timeout.limit,
                                None,
                            );
                            failure = Some((ring[wi], e));
                            break 'run;
                        }
                    }
                    std::hint::spin_loop();
                }
                mr.store_u8(slot, 0);
            }
        }
        let k = fastrand(&mut seed) as usize % targets.len();
        ring[wi] = k;
        let off = remote_offset(&mut seed, polling, size);
        let tg = &mut targets[k];
        let posted = tg.batch.move_to(0, (wi * size) as u64, off).and_then(|()| {
            if a.allsig {
                tg.batch.post(&mut tg.qp)
            } else {
                tg.batch
                    .post_selective(&mut tg.qp, &mut tg.counter, timeout)
            }
        });
        if let Err(e) = posted {
            failure = Some((k, e));
            break;
        }
        outstanding += usize::from(a.allsig);
        ops += 1;
        m.count(ops);
        wi += 1;
        if wi == window {
            wi = 0;
        }
    }
    m.stop();
    if failure.is_none() {
        failure = drain(targets, &ring, wi, outstanding, a.allsig, timeout).err();
    }
    if let Some((k, e)) = failure {
        let tg = &targets[k];
        swarm.end_or(tg.process, peer_lost(e, &tg.peer, ops > 0))?;
    }
    swarm.finish_thread()
}

/// Reaps the signaled operations still out: with --allsig the last `outstanding` of the window
/// (oldest first), else each QP's selectively signaled ones.
fn drain(
    targets: &mut [Target],
    ring: &[usize],
    wi: usize,
    outstanding: usize,
    allsig: bool,
    timeout: PollTimeout,
) -> std::result::Result<(), (usize, Error)> {
    let window = ring.len();
    if allsig {
        let first = (wi + window - outstanding) % window;
        for j in 0..outstanding {
            let k = ring[(first + j) % window];
            poll_one(targets[k].qp.send_cq(), timeout).map_err(|e| (k, e))?;
        }
        return Ok(());
    }
    for (k, tg) in targets.iter_mut().enumerate() {
        tg.counter
            .drain(tg.qp.send_cq(), timeout)
            .map_err(|e| (k, e))?;
    }
    Ok(())
}
