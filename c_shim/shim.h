/*
 * Exported, non-inline entry points for the verbs that rdma-core ships only as `static inline`
 * functions or as macros that redirect to versioned symbols. Each is a one-line forward; compiled
 * with -O2 the body is the same provider call the inline C would make.
 */
#ifndef RDMA_BENCH_SHIM_H
#define RDMA_BENCH_SHIM_H

#include <infiniband/verbs.h>

/* Classic post/poll (ops table through the context). */
int shim_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad_wr);
int shim_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr);
int shim_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr);
int shim_poll_cq(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc);
int shim_req_notify_cq(struct ibv_cq *cq, int solicited_only);

/* Macro-redirected verbs. */
int shim_query_port(struct ibv_context *ctx, uint8_t port_num, struct ibv_port_attr *attr);
struct ibv_mr *shim_reg_mr(struct ibv_pd *pd, void *addr, size_t length, unsigned int access);

/*
 * Extended QP and the ibv_wr_* post API (rdma-core >= v24): build.rs defines RDMA_BENCH_WR_API
 * when the headers have them.
 */
#ifdef RDMA_BENCH_WR_API
struct ibv_qp *shim_create_qp_ex(struct ibv_context *ctx, struct ibv_qp_init_attr_ex *attr);
struct ibv_qp_ex *shim_qp_to_qp_ex(struct ibv_qp *qp);
void shim_wr_start(struct ibv_qp_ex *qp);
int shim_wr_complete(struct ibv_qp_ex *qp);
void shim_wr_abort(struct ibv_qp_ex *qp);
void shim_wr_rdma_write(struct ibv_qp_ex *qp, uint32_t rkey, uint64_t remote_addr);
void shim_wr_rdma_write_imm(struct ibv_qp_ex *qp, uint32_t rkey, uint64_t remote_addr, __be32 imm);
void shim_wr_rdma_read(struct ibv_qp_ex *qp, uint32_t rkey, uint64_t remote_addr);
void shim_wr_send(struct ibv_qp_ex *qp);
void shim_wr_send_imm(struct ibv_qp_ex *qp, __be32 imm);
void shim_wr_atomic_fetch_add(struct ibv_qp_ex *qp, uint32_t rkey, uint64_t remote_addr, uint64_t add);
void shim_wr_atomic_cmp_swp(struct ibv_qp_ex *qp, uint32_t rkey, uint64_t remote_addr,
			    uint64_t compare, uint64_t swap);
void shim_wr_set_sge(struct ibv_qp_ex *qp, uint32_t lkey, uint64_t addr, uint32_t length);
void shim_wr_set_inline_data(struct ibv_qp_ex *qp, void *addr, size_t length);
void shim_wr_set_ud_addr(struct ibv_qp_ex *qp, struct ibv_ah *ah, uint32_t remote_qpn,
			 uint32_t remote_qkey);
#endif /* RDMA_BENCH_WR_API */

/* GID table entries with their type (rdma-core >= v32): build.rs defines RDMA_BENCH_QUERY_GID_EX. */
#ifdef RDMA_BENCH_QUERY_GID_EX
int shim_query_gid_ex(struct ibv_context *ctx, uint32_t port_num, uint32_t gid_index,
		      struct ibv_gid_entry *entry);
#endif

#endif
