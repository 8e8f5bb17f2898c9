/* What bindgen sees: the user's own rdma-core / MLNX_OFED headers. */
#include <infiniband/verbs.h>
