/* gpu-provision certify: an MPI job shaped like a user's, started with `srun --mpi=pmix`.
 *
 * Every rank contributes known values to allreduces (one integer, then a vector of MPI_CHECK_COUNT
 * 64-bit integers) and checks every element of the result, so a wrong sum anywhere is caught. First, direct
 * exchanges, so a fault between any two nodes fails the job: collectives alone talk to a few partners each and
 * may never use a broken path. The ranks of a node exchange with each other, and one rank per node (its first)
 * with the first rank of every other node: a path between two nodes is the same for every rank pair across them,
 * and exchanging between every pair of ranks costs ranks-per-node squared times as many connections (15,750
 * exchanges for 63 nodes of 2 ranks, 3,906 between their nodes). Beyond MPI_CHECK_ALL_NODES nodes, a node's first
 * rank meets the nodes at power-of-two offsets around the ring of nodes (2 log2(nodes) of them): every node is
 * still met, each through several peers, in O(log nodes) steps.
 *
 * The exchanges come before any collective and need none: which ranks share a node is read from Slurm's step
 * layout (SLURM_STEP_TASKS_PER_NODE, SLURM_NODEID, SLURM_LOCALID, block distribution; checked against the rank,
 * else the communicators are split by MPI), so a broken path cannot hang a collective first. They are all posted
 * at once and polled: a broken path leaves Open MPI's TCP transport retrying instead of failing, so an exchange
 * still pending MPI_CHECK_STALL_FACTOR times as long as the rank took to get its answers so far (from the start
 * of MPI_Init; at least MPI_CHECK_STALL_MIN_S) is given up: the rank names the rank that did not answer and exits 3
 * within seconds, where waiting for the whole deadline cost each failing job of a bisection minutes (the rank it
 * names may itself be waiting on the broken path: bisection, not this message, names the pair). A healthy
 * exchange on a loaded machine is slow for every peer alike, so the bound grows with the load. Everything up to
 * the end of the first allreduce must also finish within MPI_CHECK_WIRE_S (exit 3). Each rank prints one line:
 *   mpi rank=R size=N host=H errors=E small_us=T1 large_ms=T2 bytes=B
 * and exits 1 when its result was wrong. Rank 0's timings are the job's figures.
 */
#include <mpi.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MPI_CHECK_COUNT (1 << 20) /* 8 MiB of int64 per rank */
#define MPI_CHECK_ROUNDS 5
#define MPI_CHECK_WIRE_S 120 /* backstop up to the first allreduce: 55 s seen on a heavily loaded machine */
#define MPI_CHECK_ALL_NODES 256 /* up to this many nodes, every pair of nodes exchanges directly */
#define MPI_CHECK_STALL_MIN_S 30.0 /* an exchange given up: pending at least this long (a peer that starts late) ... */
#define MPI_CHECK_STALL_FACTOR 10.0 /* ... and this many times as long as the answers so far took */
#define MPI_CHECK_MAX_NODES 65536
#define LOCAL_TAG 0 /* the exchanges of a node's ranks; between nodes, the tag is the offset (1 and up) */

static void wire_timeout(int sig) {
    static const char msg[] = "mpi-check: no answer within 120 s from another rank (first allreduce or the exchange "
                              "with the other nodes): a path between two nodes is broken\n";
    ssize_t written = write(2, msg, sizeof msg - 1); /* async-signal-safe, unlike fprintf */
    (void)sig;
    (void)written;
    _exit(3);
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int64_t pattern(long i) { return (int64_t)(i % 1000) + 1; }

/* The exchanges one rank takes part in: to[i] gets this rank's value, from[i] sends its own, with tag[i]. */
typedef struct {
    int count, *to, *from, *tag;
} Plan;

static void plan_add(Plan *plan, int to, int from, int tag) {
    plan->to[plan->count] = to;
    plan->from[plan->count] = from;
    plan->tag[plan->count] = tag;
    plan->count++;
}

/* Members first, first+1, ... first+n-1 (ranks of `comm`), this rank being member `me`: every pair when n <= all,
 * else the power-of-two offsets; `tagged`: the tag is the offset, else LOCAL_TAG. */
static void plan_ring(Plan *plan, int first, int n, int me, int all, int tagged, const int *members) {
    for (int step = 1; step < n; step = n <= all ? step + 1 : step * 2) {
        int to = (me + step) % n, from = (me - step + n) % n;
        plan_add(plan, members ? members[to] : first + to, members ? members[from] : first + from,
                 tagged ? step : LOCAL_TAG);
    }
}

/* Post every exchange of `plan` at once and wait for them, giving up on a stall (header): the number of wrong
 * values received; exits 3 naming the ranks that did not answer. */
static long exchange(MPI_Comm comm, const Plan *plan, int rank, double started) {
    int n = plan->count, done = 0, got_count;
    int64_t mine = rank + 1;
    int64_t *got = malloc(sizeof(int64_t) * (n + 1));
    MPI_Request *req = malloc(sizeof(MPI_Request) * (2 * n + 1));
    int *index = malloc(sizeof(int) * (2 * n + 1)), *answered = calloc(n + 1, sizeof(int));
    if (!got || !req || !index || !answered) {
        fprintf(stderr, "mpi-check: cannot allocate the exchanges of %d peers\n", n);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    for (int i = 0; i < n; i++) {
        MPI_Irecv(&got[i], 1, MPI_INT64_T, plan->from[i], plan->tag[i], comm, &req[i]);
        MPI_Isend(&mine, 1, MPI_INT64_T, plan->to[i], plan->tag[i], comm, &req[n + i]);
    }
    double progress = now_s();
    while (done < 2 * n) {
        MPI_Testsome(2 * n, req, &got_count, index, MPI_STATUSES_IGNORE);
        if (got_count > 0 && got_count != MPI_UNDEFINED) {
            done += got_count;
            progress = now_s();
            for (int k = 0; k < got_count; k++)
                if (index[k] < n) answered[index[k]] = 1;
            continue;
        }
        double waited = now_s() - progress, bound = MPI_CHECK_STALL_FACTOR * (progress - started);
        if (waited > (bound > MPI_CHECK_STALL_MIN_S ? bound : MPI_CHECK_STALL_MIN_S)) {
            for (int i = 0; i < n; i++)
                if (!answered[i])
                    fprintf(stderr, "mpi-check: rank %d: no answer from rank %d within %.0f s, while %d of %d "
                                    "exchanges completed %.1f s after start: a path between two nodes is broken "
                                    "(theirs, or one that rank waits on)\n",
                            rank, plan->from[i], waited, done, 2 * n, progress - started);
            fflush(stderr);
            _exit(3);
        }
        usleep(1000);
    }
    long errors = 0;
    for (int i = 0; i < n; i++) errors += got[i] != plan->from[i] + 1;
    free(got);
    free(req);
    free(index);
    free(answered);
    return errors;
}

/* Slurm's tasks per node ("2(x3),1") as counts per node: how many nodes, or 0 when it cannot be read. */
static int tasks_per_node(const char *text, int *counts, int most) {
    int nodes = 0;
    while (text && *text) {
        char *end;
        long tasks = strtol(text, &end, 10), times = 1;
        if (end == text || tasks < 1) return 0;
        if (strncmp(end, "(x", 2) == 0) {
            times = strtol(end + 2, &end, 10);
            if (times < 1 || *end != ')') return 0;
            end++;
        }
        for (long k = 0; k < times; k++) {
            if (nodes == most) return 0;
            counts[nodes++] = (int)tasks;
        }
        text = *end == ',' ? end + 1 : end;
        if (*end && *end != ',') return 0;
    }
    return nodes;
}

/* The exchanges of this rank in MPI_COMM_WORLD from Slurm's step layout, without any collective; 0 when the
 * layout is missing or is not a block distribution that matches the rank. */
static int plan_from_slurm(Plan *plan, int rank, int size) {
    static int counts[MPI_CHECK_MAX_NODES], firsts[MPI_CHECK_MAX_NODES];
    const char *layout = getenv("SLURM_STEP_TASKS_PER_NODE"), *node_id = getenv("SLURM_NODEID"),
               *local_id = getenv("SLURM_LOCALID");
    int nodes = tasks_per_node(layout, counts, MPI_CHECK_MAX_NODES);
    if (!nodes || !node_id || !local_id) return 0;
    int node = atoi(node_id), local = atoi(local_id), total = 0;
    for (int k = 0; k < nodes; k++) {
        firsts[k] = total;
        total += counts[k];
    }
    if (total != size || node < 0 || node >= nodes || local < 0 || local >= counts[node] ||
        firsts[node] + local != rank)
        return 0;
    plan_ring(plan, firsts[node], counts[node], local, size, 0, NULL);
    if (local == 0) plan_ring(plan, 0, nodes, node, MPI_CHECK_ALL_NODES, 1, firsts);
    return 1;
}

/* The exchanges from communicators MPI splits (outside Slurm's layout): the node's ranks, then the nodes' first
 * ranks. The splits are collectives, so a broken path may then be caught by the MPI_CHECK_WIRE_S backstop only. */
static long exchange_by_split(int rank, int size, double started, Plan *plan) {
    MPI_Comm node, firsts;
    int local, members, me;
    long errors;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &local);
    MPI_Comm_size(node, &members);
    MPI_Comm_split(MPI_COMM_WORLD, local == 0 ? 0 : MPI_UNDEFINED, rank, &firsts);
    plan->count = 0;
    plan_ring(plan, 0, members, local, size, 0, NULL);
    errors = exchange(node, plan, local, started);
    if (firsts != MPI_COMM_NULL) {
        MPI_Comm_rank(firsts, &me);
        MPI_Comm_size(firsts, &members);
        plan->count = 0;
        plan_ring(plan, 0, members, me, MPI_CHECK_ALL_NODES, 1, NULL);
        errors += exchange(firsts, plan, me, started);
        MPI_Comm_free(&firsts);
    }
    MPI_Comm_free(&node);
    return errors;
}

int main(int argc, char **argv) {
    int rank, size, len;
    char host[MPI_MAX_PROCESSOR_NAME];
    double started = now_s();
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Get_processor_name(host, &len);
    const int64_t ranks_sum = (int64_t)size * (size + 1) / 2;

    signal(SIGALRM, wire_timeout);
    alarm(MPI_CHECK_WIRE_S);
    int room = 2 * size + 64; /* every local rank plus 2 log2(nodes), or every node */
    Plan plan = {0, malloc(sizeof(int) * room), malloc(sizeof(int) * room), malloc(sizeof(int) * room)};
    if (!plan.to || !plan.from || !plan.tag) {
        fprintf(stderr, "mpi-check: cannot allocate the plan of %d ranks\n", size);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    long errors = plan_from_slurm(&plan, rank, size) ? exchange(MPI_COMM_WORLD, &plan, rank, started)
                                                      : exchange_by_split(rank, size, started, &plan);
    free(plan.to);
    free(plan.from);
    free(plan.tag);
    int64_t mine = rank + 1, total = 0;
    MPI_Allreduce(&mine, &total, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
    errors += total != ranks_sum;
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
