/* What bindgen sees: the user's own rdma-core / MLNX_OFED headers. */
#include <infiniband/verbs.h>
#ifdef RDMA_BENCH_RDMACM
#include <rdma/rdma_cma.h>
#endif
