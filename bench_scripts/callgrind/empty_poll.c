/* The C side of bench_scripts/shim-cost.sh: N polls of an empty CQ through the inline ibv_poll_cq,
 * the same loop as examples/empty_poll.rs. */
#include <infiniband/verbs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: empty_poll N\n");
		return 2;
	}
	unsigned long n = strtoul(argv[1], NULL, 10);
	const char *want = getenv("RDMA_BENCH_DEVICE");
	int num;
	struct ibv_device **list = ibv_get_device_list(&num);
	struct ibv_context *ctx = NULL;
	for (int i = 0; list && i < num && !ctx; i++)
		if (!want || strcmp(ibv_get_device_name(list[i]), want) == 0)
			ctx = ibv_open_device(list[i]);
	if (!ctx) {
		fprintf(stderr, "empty_poll: no device\n");
		return 1;
	}
	struct ibv_cq *cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	if (!cq) {
		fprintf(stderr, "empty_poll: ibv_create_cq failed\n");
		return 1;
	}
	struct ibv_wc wc;
	unsigned long found = 0;
	for (unsigned long i = 0; i < n; i++) {
		int r = ibv_poll_cq(cq, 1, &wc);
		if (r > 0)
			found += r;
		__asm__ volatile("" ::: "memory"); /* keep the loop, as black_box does */
	}
	printf("%lu polls, %lu completions\n", n, found);
	ibv_destroy_cq(cq);
	ibv_close_device(ctx);
	ibv_free_device_list(list);
	return 0;
}
