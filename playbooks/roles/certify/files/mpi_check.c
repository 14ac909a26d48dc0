/* gpu-provision certify: an MPI job shaped like a user's, started with `srun --mpi=pmix`.
 *
 * Every rank contributes known values to allreduces (one integer, then a vector of MPI_CHECK_COUNT
 * 64-bit integers) and checks every element of the result, so a wrong sum anywhere is caught. First, direct
 * exchanges (MPI_Sendrecv), so a fault between any two nodes fails the job: collectives alone talk to a few
 * partners each and may never use a broken path. The ranks of a node exchange with each other, and one rank per
 * node (its first) with the first rank of every other node: a path between two nodes is the same for every rank
 * pair across them, and exchanging between every pair of ranks costs ranks-per-node squared times as many
 * connections (15,750 exchanges for 63 nodes of 2 ranks, 3,906 between their nodes). Beyond
 * MPI_CHECK_ALL_NODES nodes, a node's first rank meets the nodes at power-of-two offsets around the ring of
 * nodes (2 log2(nodes) of them): every node is still met, each through several peers, in O(log nodes) steps.
 * A rank that does not get through the first allreduce and those exchanges within MPI_CHECK_WIRE_S exits 3 (a
 * broken path can leave Open MPI's TCP transport waiting for ever instead of failing). Each rank
 * prints one line:
 *   mpi rank=R size=N host=H errors=E small_us=T1 large_ms=T2 bytes=B
 * and exits 1 when its result was wrong. Rank 0's timings are the job's figures.
 */
#include <mpi.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define MPI_CHECK_COUNT (1 << 20) /* 8 MiB of int64 per rank */
#define MPI_CHECK_ROUNDS 5
#define MPI_CHECK_WIRE_S 120 /* the first allreduce and the exchanges: 55 s seen on a heavily loaded machine */
#define MPI_CHECK_ALL_NODES 256 /* up to this many nodes, every pair of nodes exchanges directly */

static void wire_timeout(int sig) {
    static const char msg[] = "mpi-check: no answer within 120 s from another rank (first allreduce or the exchange "
                              "with the other nodes): a path between two nodes is broken\n";
    ssize_t written = write(2, msg, sizeof msg - 1); /* async-signal-safe, unlike fprintf */
    (void)sig;
    (void)written;
    _exit(3);
}

static int64_t pattern(long i) { return (int64_t)(i % 1000) + 1; }

/* One value each way with the ranks `step` below and above in `comm`; the number of wrong values received. */
static long exchange(MPI_Comm comm, int step) {
    int me, n;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &n);
    int64_t mine = me + 1, got = -1;
    MPI_Sendrecv(&mine, 1, MPI_INT64_T, (me + step) % n, step, &got, 1, MPI_INT64_T, (me - step + n) % n, step,
                 comm, MPI_STATUS_IGNORE);
    return got != (me - step + n) % n + 1;
}

/* Every pair of ranks of `comm` when it has at most `all` ranks, else the power-of-two offsets. */
static long exchange_all(MPI_Comm comm, int all) {
    int n;
    long errors = 0;
    MPI_Comm_size(comm, &n);
    for (int step = 1; step < n; step = n <= all ? step + 1 : step * 2)
        errors += exchange(comm, step);
    return errors;
}

int main(int argc, char **argv) {
    int rank, size, len;
    char host[MPI_MAX_PROCESSOR_NAME];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Get_processor_name(host, &len);
    const int64_t ranks_sum = (int64_t)size * (size + 1) / 2;

    signal(SIGALRM, wire_timeout);
    alarm(MPI_CHECK_WIRE_S);
    int64_t mine = rank + 1, total = 0;
    MPI_Allreduce(&mine, &total, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD); /* wires up the connections */
    long errors = total != ranks_sum;
    MPI_Comm node, firsts;
    int local;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &local);
    MPI_Comm_split(MPI_COMM_WORLD, local == 0 ? 0 : MPI_UNDEFINED, rank, &firsts);
    errors += exchange_all(node, size); /* the ranks of this node, every pair */
    if (firsts != MPI_COMM_NULL) {
        errors += exchange_all(firsts, MPI_CHECK_ALL_NODES); /* between the nodes */
        MPI_Comm_free(&firsts);
    }
    MPI_Comm_free(&node);
    alarm(0);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    MPI_Allreduce(&mine, &total, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
    double small_us = (MPI_Wtime() - t0) * 1e6;
    errors += total != ranks_sum;

    int64_t *in = malloc(sizeof(int64_t) * MPI_CHECK_COUNT), *out = malloc(sizeof(int64_t) * MPI_CHECK_COUNT);
    if (!in || !out) {
        fprintf(stderr, "mpi rank=%d: cannot allocate %zu bytes\n", rank, sizeof(int64_t) * MPI_CHECK_COUNT);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    for (long i = 0; i < MPI_CHECK_COUNT; i++) in[i] = (int64_t)(rank + 1) * pattern(i);
    double best = -1;
    for (int round = 0; round < MPI_CHECK_ROUNDS; round++) {
        MPI_Barrier(MPI_COMM_WORLD);
        t0 = MPI_Wtime();
        MPI_Allreduce(in, out, MPI_CHECK_COUNT, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
        double took = MPI_Wtime() - t0;
        if (best < 0 || took < best) best = took;
    }
    for (long i = 0; i < MPI_CHECK_COUNT; i++) errors += out[i] != ranks_sum * pattern(i);

    printf("mpi rank=%d size=%d host=%s errors=%ld small_us=%.1f large_ms=%.3f bytes=%zu\n", rank, size, host,
           errors, small_us, best * 1e3, sizeof(int64_t) * MPI_CHECK_COUNT);
    fflush(stdout);
    free(in);
    free(out);
    MPI_Finalize();
    return errors ? 1 : 0;
}
