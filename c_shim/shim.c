#include "shim.h"

int shim_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad_wr)
{
	return ibv_post_send(qp, wr, bad_wr);
}

int shim_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr)
{
	return ibv_post_recv(qp, wr, bad_wr);
}

int shim_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr)
{
	return ibv_post_srq_recv(srq, wr, bad_wr);
}

int shim_poll_cq(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc)
{
	return ibv_poll_cq(cq, num_entries, wc);
}

int shim_req_notify_cq(struct ibv_cq *cq, int solicited_only)
{
	return ibv_req_notify_cq(cq, solicited_only);
}

int shim_query_port(struct ibv_context *ctx, uint8_t port_num, struct ibv_port_attr *attr)
{
	return ibv_query_port(ctx, port_num, attr);
}

struct ibv_mr *shim_reg_mr(struct ibv_pd *pd, void *addr, size_t length, unsigned int access)
{
	return ibv_reg_mr(pd, addr, length, (int)access);
}

#ifdef RDMA_BENCH_WR_API
struct ibv_qp *shim_create_qp_ex(struct ibv_context *ctx, struct ibv_qp_init_attr_ex *attr)
{
	return ibv_create_qp_ex(ctx, attr);
}

struct ibv_qp_ex *shim_qp_to_qp_ex(struct ibv_qp *qp)
{
	return ibv_qp_to_qp_ex(qp);
}

void shim_wr_start(struct ibv_qp_ex *qp) { ibv_wr_start(qp); }
int shim_wr_complete(struct ibv_qp_ex *qp) { return ibv_wr_complete(qp); }
void shim_wr_abort(struct ibv_qp_ex *qp) { ibv_wr_abort(qp); }

void shim_wr_rdma_write(struct ibv_qp_ex *qp, uint32_t rkey, uint64_t remote_addr)
{
	ibv_wr_rdma_write(qp, rkey, remote_addr);
}

void shim_wr_rdma_write_imm(struct ibv_qp_ex *qp, uint32_t rkey, uint64_t remote_addr, __be32 imm)
{
	ibv_wr_rdma_write_imm(qp, rkey, remote_addr, imm);
}

void shim_wr_rdma_read(struct ibv_qp_ex *qp, uint32_t rkey, uint64_t remote_addr)
{
	ibv_wr_rdma_read(qp, rkey, remote_addr);
}

void shim_wr_send(struct ibv_qp_ex *qp) { ibv_wr_send(qp); }
void shim_wr_send_imm(struct ibv_qp_ex *qp, __be32 imm) { ibv_wr_send_imm(qp, imm); }

void shim_wr_atomic_fetch_add(struct ibv_qp_ex *qp, uint32_t rkey, uint64_t remote_addr, uint64_t add)
{
	ibv_wr_atomic_fetch_add(qp, rkey, remote_addr, add);
}

void shim_wr_atomic_cmp_swp(struct ibv_qp_ex *qp, uint32_t rkey, uint64_t remote_addr,
			    uint64_t compare, uint64_t swap)
{
	ibv_wr_atomic_cmp_swp(qp, rkey, remote_addr, compare, swap);
}

void shim_wr_set_sge(struct ibv_qp_ex *qp, uint32_t lkey, uint64_t addr, uint32_t length)
{
	ibv_wr_set_sge(qp, lkey, addr, length);
}

void shim_wr_set_inline_data(struct ibv_qp_ex *qp, void *addr, size_t length)
{
	ibv_wr_set_inline_data(qp, addr, length);
}

void shim_wr_set_ud_addr(struct ibv_qp_ex *qp, struct ibv_ah *ah, uint32_t remote_qpn,
			 uint32_t remote_qkey)
{
	ibv_wr_set_ud_addr(qp, ah, remote_qpn, remote_qkey);
}
#endif /* RDMA_BENCH_WR_API */

#ifdef RDMA_BENCH_QUERY_GID_EX
int shim_query_gid_ex(struct ibv_context *ctx, uint32_t port_num, uint32_t gid_index,
		      struct ibv_gid_entry *entry)
{
	return ibv_query_gid_ex(ctx, port_num, gid_index, entry, 0);
}
#endif
