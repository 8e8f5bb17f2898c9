//! The clients: pick a key (uniform or Zipf) and GET or PUT it, WRITE the request inlined into
//! the owning worker's next slot, keep `window` requests outstanding, and take the replies on a
//! UD QP. With `--verify 1` a client PUTs only the keys it owns (key index ≡ client id mod
//! num-clients), remembers each one's last version, and checks every GET hit of its keys
//! against it.

use std::sync::Arc;

use super::book::{Pending, RequestBook};
use super::wire::{self, parse_imm, Request};
use super::{owner, HerdArgs};
use crate::error::{Error, Result};
use crate::framework::request_rpc::{connect_client, run_window, RpcShape, WindowClient};
use crate::framework::ud_rpc::UdRpc;
use crate::framework::{publish_done, Endpoint, Meter, Plan, Role, ThreadCtx};
use crate::hot::{
    Op, PollTimeout, Postlist, Remote, SendBatch, SendSpec, SlotLayout, UnsignaledCounter,
    GRH_BYTES,
};
use crate::kv::{splitmix64, value_of, Key, Zipf, MAX_VALUE, SPLITMIX_GAMMA};
use crate::registry::{PeerWatch, Registry};
use crate::verbs::WorkCompletion;

/// The client's keys, draws and checks.
struct Keys<'a> {
    rng: u64,
    num_keys: u64,
    clients: u64,
    id: u64,
    update_percentage: u64,
    zipf: Option<&'a Zipf>,
    verify: bool,
    /// Last version PUT of each owned key (key index / clients).
    versions: Vec<u32>,
    gets: u64,
    hits: u64,
    checked: u64,
}

impl Keys<'_> {
    #[inline(always)]
    fn next_u64(&mut self) -> u64 {
        let z = splitmix64(self.rng);
        self.rng = self.rng.wrapping_add(SPLITMIX_GAMMA);
        z
    }

    /// The next request: (key index, is it a PUT).
    #[inline(always)]
    fn draw(&mut self) -> (u64, bool) {
        let r = self.next_u64();
        let mut idx = match self.zipf {
            Some(z) => z.rank((r >> 11) as f64 / (1u64 << 53) as f64),
            None => ((u128::from(r) * u128::from(self.num_keys)) >> 64) as u64,
        };
        let put = self.next_u64() % 100 < self.update_percentage;
        if put && self.verify {
            // Our own key next to the drawn one: only its owner writes a key.
            idx = idx - idx % self.clients + self.id;
            if idx >= self.num_keys {
                idx -= self.clients;
            }
        }
        (idx, put)
    }

    #[inline(always)]
    fn owned(&self, idx: u64) -> bool {
        self.verify && idx % self.clients == self.id
    }
}

/// The client threads of one process.
pub(super) struct Clients<'a> {
    shape: RpcShape<'a>,
    ha: &'a HerdArgs,
    reg: Arc<Registry>,
    zipf: Option<&'a Zipf>,
}

impl<'a> Clients<'a> {
    pub(super) fn new(
        shape: RpcShape<'a>,
        ha: &'a HerdArgs,
        reg: Arc<Registry>,
        zipf: Option<&'a Zipf>,
    ) -> Self {
        Clients {
            shape,
            ha,
            reg,
            zipf,
        }
    }
}

/// A client thread: its reply QP and its sending side.
pub(super) struct Client<'z> {
    rpc: UdRpc,
    sender: HerdClient<'z>,
    _watch: PeerWatch,
    /// Replies measured, or None when the last ones did not come after a signal.
    measured: Option<u64>,
}

impl<'a> Role for Clients<'a> {
    type Thread = Client<'a>;

    fn plan(&self) -> Plan {
        self.shape.client_plan(&self.ha.rpc)
    }

    fn setup(&self, ctx: &ThreadCtx<'_>) -> Result<Client<'a>> {
        let (ha, id) = (self.ha, ctx.global_id);
        let a = &ha.rpc;
        let link = connect_client(self.shape, a, &self.reg, ctx, MAX_VALUE)?;
        let mut ep = link.ep;
        let (qp, mr) = ep.parts();
        let send = SendSpec {
            op: Op::Write,
            postlist: 1,
            size: ha.max_request() as u32,
            stride: 0,
            local_offset: 0,
            remote_offset: 0,
            inline: true,
        };
        let batch = SendBatch::new(qp, mr, send, Some(Remote::of(&link.master.info)))?;
        let clients = a.num_clients as u64;
        let sender = HerdClient {
            ep,
            batch,
            sig: a.queue.counter(),
            timeout: PollTimeout::new(ctx.attention),
            layout: a.layout(wire::SLOT_BYTES),
            id,
            book: RequestBook::new(a.num_workers, a.window),
            held: None,
            waits: 0,
            value: [0; MAX_VALUE],
            value_size: ha.value_size,
            keys: Keys {
                rng: 0xdead_beef ^ (id as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15),
                num_keys: ha.num_keys,
                clients,
                id: id as u64,
                update_percentage: u64::from(ha.update_percentage),
                zipf: self.zipf,
                verify: a.common.verify,
                versions: if a.common.verify {
                    vec![0; ha.num_keys.div_ceil(clients) as usize]
                } else {
                    Vec::new()
                },
                gets: 0,
                hits: 0,
                checked: 0,
            },
        };
        Ok(Client {
            rpc: link.rpc,
            sender,
            _watch: link.watch,
            measured: None,
        })
    }

    fn measure(&self, c: &mut Client<'a>, m: &mut Meter<'_>) -> Result<()> {
        let a = &self.ha.rpc;
        let me = format!("client-{}", c.sender.id);
        let limit = a.common.op_limit();
        c.measured = run_window(&mut c.rpc, &mut c.sender, a.window, limit, m, &me)?;
        Ok(())
    }

    fn finish(&self, mut c: Client<'a>, _: &ThreadCtx<'_>) -> Result<()> {
        let (a, reg) = (&self.ha.rpc, &self.reg);
        let s = &mut c.sender;
        let (id, me) = (s.id, format!("client-{}", s.id));
        if c.measured.is_none() {
            return publish_done(reg, &me);
        }
        s.sig.drain(s.ep.qp().send_cq(), s.timeout)?;
        let k = &s.keys;
        let rate = if k.gets == 0 {
            0.0
        } else {
            k.hits as f64 / k.gets as f64
        };
        println!(
            "main: Client {id}: GET hit rate = {rate:.4} ({} of {} GETs); {} requests waited for a \
             reply that a later one overtook",
            k.hits, k.gets, s.waits
        );
        if a.common.verify {
            println!(
                "main: Client {id}: verify ok: {} GET hits of its own keys matched the last value it PUT",
                k.checked
            );
        }
        publish_done(reg, &me)
    }
}

/// A client's sending and checking state.
pub(super) struct HerdClient<'z> {
    ep: Endpoint,
    batch: SendBatch,
    sig: UnsignaledCounter,
    timeout: PollTimeout,
    layout: SlotLayout,
    id: usize,
    /// Requests in flight.
    book: RequestBook,
    /// A drawn request waiting for its slot's last reply.
    held: Option<(u64, bool)>,
    /// Times a request had to wait so.
    waits: u64,
    value: [u8; MAX_VALUE],
    value_size: usize,
    keys: Keys<'z>,
}

impl WindowClient for HerdClient<'_> {
    /// One request: drawn, built into our buffer (the WRITE is inlined, so the buffer is free
    /// again once posted), WRITTEN into the owning worker's next slot.
    #[inline]
    fn send(&mut self) -> Result<bool> {
        let (idx, put) = self.held.take().unwrap_or_else(|| self.keys.draw());
        let key = Key::of(idx);
        let w = owner(key, self.layout.workers);
        let Some((s, seq)) = self.book.next(w) else {
            // The worker took that slot's request (it answered a later one), but the reply is
            // still on its way over another UD QP: this request waits for it.
            self.held = Some((idx, put));
            self.waits += 1;
            return Ok(false);
        };
        let keys = &mut self.keys;
        let mut version = 0;
        if keys.owned(idx) {
            let v = &mut keys.versions[(idx / keys.clients) as usize];
            if put {
                *v = v.wrapping_add(1);
            }
            version = *v;
        }
        let vs = self.value_size;
        let req = if put {
            if keys.verify {
                value_of(key, version, &mut self.value[..vs]);
            }
            Request::put(key, &self.value[..vs], seq)
        } else {
            Request::get(key, seq)
        };
        let (qp, mr) = self.ep.parts();
        for (i, &word) in req.words.iter().enumerate().take(req.len.div_ceil(8)) {
            mr.store_u64(8 * i, word);
        }
        let off = self.layout.offset(w, self.id, s) + wire::CHECK_AT;
        self.batch
            .retarget_sized(0, Op::Write, off as u64, req.len as u32)?;
        self.book.sent(
            w,
            Pending {
                put,
                key: idx as u32,
                version,
            },
        );
        self.batch.post_selective(qp, &mut self.sig, self.timeout)?;
        Ok(true)
    }

    /// Which request a reply answers, and whether it says what it must.
    #[inline]
    fn take(&mut self, rpc: &UdRpc, wc: &WorkCompletion) -> Result<()> {
        let (w, s) = parse_imm(wc.imm_data().unwrap_or(u32::MAX));
        let Some(p) = self.book.answer(w, s) else {
            return Err(Error::protocol(format!(
                "a reply (immediate {:?}) answers no outstanding request",
                wc.imm_data()
            )));
        };
        let len = (wc.byte_len() as usize).saturating_sub(GRH_BYTES);
        if p.put {
            return if len == 0 {
                Ok(())
            } else {
                Err(Error::protocol(format!(
                    "a PUT's reply carried {len} bytes"
                )))
            };
        }
        let keys = &mut self.keys;
        keys.gets += 1;
        if len == 0 {
            return Ok(());
        }
        keys.hits += 1;
        let vs = self.value_size;
        if len != vs {
            return Err(Error::protocol(format!(
                "a GET returned {len} bytes, not the run's {vs}-byte values"
            )));
        }
        if keys.owned(u64::from(p.key)) {
            let mut got = [0u8; MAX_VALUE];
            let mut want = [0u8; MAX_VALUE];
            rpc.recv_mr.read(rpc.payload_offset(wc), &mut got[..vs]);
            value_of(Key::of(u64::from(p.key)), p.version, &mut want[..vs]);
            if got[..vs] != want[..vs] {
                return Err(Error::Verify(format!(
                    "GET of key {} returned {:02x?}, not version {} of it, the last this client PUT",
                    p.key,
                    &got[..vs],
                    p.version
                )));
            }
            keys.checked += 1;
        }
        Ok(())
    }
}
