// hostrun: runs decode.cu's kernel on the CPU, for tests on machines
// without a GPU (cuda/hostkernel_test.go builds it with clang++-16 under
// AddressSanitizer and UndefinedBehaviorSanitizer, with every buffer
// allocated at exactly the size the device gets, so a read or write past
// one fails the test).
//
// A block's BlockThreads threads run as OS threads meeting at
// __syncthreads (a barrier); blocks run one after another, the kernel's
// __shared__ arrays being function statics shared by the block's threads.
//
//   hostrun META PACKED OUTLEN DESCOFF BLOCKOFF TABLEOFF SUMMARYOFF BLOCKS GROUPS OUT STATUS
//
// reads the plan's Meta and the packed bytes (their file holds the PackedPad
// bytes too), writes the output buffer to OUT and the status words to
// STATUS, and prints the summary words ("failed first").
#include <barrier>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#define GLYD_HOST 1
#define __global__
#define __device__
#define __shared__ static
#define __launch_bounds__(n)
#define __forceinline__ inline

static thread_local unsigned g_tid, g_bid;
static std::barrier<> *g_bar;

static inline unsigned __nvvm_read_ptx_sreg_tid_x() { return g_tid; }
static inline unsigned __nvvm_read_ptx_sreg_ctaid_x() { return g_bid; }
static inline void __syncthreads() { g_bar->arrive_and_wait(); }
static inline unsigned __nvvm_atom_min_gen_ui(unsigned *p, unsigned v) {
    unsigned old = __atomic_load_n(p, __ATOMIC_RELAXED);
    while (v < old && !__atomic_compare_exchange_n(p, &old, v, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
    }
    return old;
}

#include "decode.cu"

static unsigned char *readFile(const char *name, size_t *n) {
    FILE *f = fopen(name, "rb");
    if (!f) {
        perror(name);
        exit(2);
    }
    fseek(f, 0, SEEK_END);
    *n = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    // Exactly n bytes (at least 1): AddressSanitizer flags any access past.
    unsigned char *b = (unsigned char *)malloc(*n ? *n : 1);
    if (*n && fread(b, 1, *n, f) != *n) {
        perror(name);
        exit(2);
    }
    fclose(f);
    return b;
}

static void writeFile(const char *name, const void *b, size_t n) {
    FILE *f = fopen(name, "wb");
    if (!f || fwrite(b, 1, n, f) != n || fclose(f) != 0) {
        perror(name);
        exit(2);
    }
}

int main(int argc, char **argv) {
    if (argc != 12) {
        fprintf(stderr, "usage: hostrun META PACKED OUTLEN DESCOFF BLOCKOFF TABLEOFF SUMMARYOFF BLOCKS GROUPS OUT STATUS\n");
        return 2;
    }
    size_t metaLen, packedLen;
    unsigned char *meta = readFile(argv[1], &metaLen);
    unsigned char *packed = readFile(argv[2], &packedLen);
    size_t outLen = strtoull(argv[3], 0, 10);
    size_t descOff = strtoull(argv[4], 0, 10), blockOff = strtoull(argv[5], 0, 10);
    size_t tableOff = strtoull(argv[6], 0, 10), summaryOff = strtoull(argv[7], 0, 10);
    unsigned blocks = (unsigned)strtoul(argv[8], 0, 10), groups = (unsigned)strtoul(argv[9], 0, 10);
    unsigned char *out = (unsigned char *)malloc(outLen ? outLen : 1);
    memset(out, 0xa5, outLen);
    u32 *status = (u32 *)malloc(groups ? 4 * (size_t)groups : 4);

    std::barrier<> bar(THREADS);
    g_bar = &bar;
    std::vector<std::thread> threads;
    for (unsigned t = 0; t < THREADS; t++) {
        threads.emplace_back([&, t] {
            g_tid = t;
            // One launch per block (grid 1, blockBase b), as a loader
            // that launches blocks as their bytes arrive may.
            for (unsigned b = 0; b < blocks; b++) {
                g_bid = 0;
                glyd_decode(packed, (const SpanDesc *)(meta + descOff), (const u32 *)(meta + blockOff),
                            meta + tableOff, out, status, (u32 *)(meta + summaryOff), b);
                bar.arrive_and_wait(); // the block's shared memory is free again
            }
        });
    }
    for (auto &th : threads) th.join();
    writeFile(argv[10], out, outLen);
    writeFile(argv[11], status, 4 * (size_t)groups);
    u32 sum[2];
    memcpy(sum, meta + summaryOff, 8);
    printf("%u %u\n", sum[0], sum[1]);
    return 0;
}
