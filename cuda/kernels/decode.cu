// glyd_decode: decodes coded tensor spans (docs/tensors.md, "span payload")
// in device memory, one thread per group, exactly as tensor/reference.go
// does. cuda/plan.go prepares the buffers this kernel reads, and
// cuda/emulate.go is a line-by-line Go model of it that the CPU tests run
// over the very bytes that would be uploaded.
//
// Compiled without the CUDA toolkit (make ptx; mk/ptx.mk):
//   clang++-16 --cuda-device-only --cuda-gpu-arch=sm_80 -nocudainc -nocudalib -O3 -S -x cuda
// so the few CUDA spellings used are defined here. kernels/hostrun.cpp
// also compiles this very source for the CPU (threads of a block as OS
// threads, under AddressSanitizer), and cuda's tests compare it with
// Emulate and with the original bytes.

// hostrun.cpp compiles this file for the CPU, with its own definitions.
#ifndef GLYD_HOST
#define __global__ __attribute__((global))
#define __device__ __attribute__((device))
#define __shared__ __attribute__((shared))
#define __launch_bounds__(n) __attribute__((launch_bounds(n)))
#define __forceinline__ __inline__ __attribute__((always_inline))
#endif

typedef unsigned char u8;
typedef unsigned short u16;
typedef unsigned int u32;
typedef unsigned long long u64;

static __device__ __forceinline__ u32 tid_x() { return __nvvm_read_ptx_sreg_tid_x(); }
static __device__ __forceinline__ u32 ctaid_x() { return __nvvm_read_ptx_sreg_ctaid_x(); }

// Launch geometry and limits; cuda/plan.go has the same numbers.
#define THREADS 128    // threads per block: one group each
#define MAX_LUT_BITS 12 // tensor.MaxCodeLen
#define TABLE_COUNTS 16 // u16 code-length counts that open a span's table

// Span kinds (tensor.Kind).
#define KIND_BF16 1
#define KIND_F16 2
#define KIND_F32 3
#define KIND_V16 4

// Group status words (cuda.Status*).
#define ST_OK 0
#define ST_BOUNDS 1  // stream offsets out of order or past the stream area
#define ST_SHORT 2   // the stream ends inside a value
#define ST_NOCODE 3  // bits that match no code (an incomplete code table)
#define ST_LEFTOVER 4 // whole bytes of the stream left unread
#define ST_CRC 5     // decoded bytes do not match the group's CRC-32C
#define ST_KIND 6    // unknown span kind

// One span, as cuda/plan.go writes it (80 bytes, little-endian). The
// payload's parts are found through the offsets, so the kernel does not
// depend on how a payload orders them.
struct SpanDesc {
    u64 ends;       // byte offset in the packed buffer of the group ends: u32 per group
                    // but the last (whose stream ends at streamLen), from the stream area's start
    u64 crcs;       // byte offset of the groups' CRC-32Cs (u32 each)
    u64 raw;        // byte offset of the raw plane (rawSize bytes per value)
    u64 streams;    // byte offset of the stream area
    u64 out;        // byte offset of the decoded values in the output buffer
    u64 values;     // values in the span
    u32 streamLen;  // bytes of the stream area
    u32 groups;     // groups in the span
    u32 groupLog2;  // values per group, log2
    u32 kind;       // KIND_*
    u32 table;      // byte offset of the span's table in the tables buffer
    u32 tb;         // lookup-table bits: the longest code length (0: one symbol)
    u32 statusBase; // status index of the span's group 0
    u32 nsym;       // symbols in the table
};

// Loads the little-endian u32 at any byte offset of a 4-byte-aligned
// buffer, with aligned loads only (the buffer is padded by 8 bytes).
static __device__ __forceinline__ u32 load32u(const u8 *base, u64 off) {
    const u32 *w = (const u32 *)(base + (off & ~(u64)3));
    u64 two = (u64)w[0] | (u64)w[1] << 32;
    return (u32)(two >> ((off & 3) * 8));
}

// 16 bytes, loaded or stored by one instruction (ld/st.global.v4.u32).
// Each thread reads its own streams and writes its own output, so a warp's
// accesses hit 32 different places: 16-byte accesses need a quarter of the
// memory transactions 4-byte ones do (the kernel is bound by them).
typedef u32 u32x4 __attribute__((ext_vector_type(4)));

// Words fetched 16 bytes at a time: lo, hi hold the next qn (0-4) words,
// the first in its low bits; nx the 16 bytes after them, loaded one step
// ahead so that the load's latency passes while the four words before it
// are decoded (a thread alone on its multiprocessor otherwise waits for
// every load); v the 16 bytes after nx.
struct Words {
    const u32x4 *v;
    u32x4 nx;
    u64 lo, hi;
    u32 qn;
};

static __device__ __forceinline__ void words_init(Words &q, const u32x4 *v) {
    q.nx = *v;
    q.v = v + 1;
    q.qn = 0;
}

static __device__ __forceinline__ u32 words_pop(Words &q) {
    if (q.qn == 0) {
        q.lo = (u64)q.nx.x | (u64)q.nx.y << 32;
        q.hi = (u64)q.nx.z | (u64)q.nx.w << 32;
        q.qn = 4;
        q.nx = *q.v++;
    }
    u32 w = (u32)q.lo;
    q.lo = q.lo >> 32 | q.hi << 32;
    q.hi >>= 32;
    q.qn--;
    return w;
}

// An LSB-first bit reader over a byte stream at any alignment: buf holds
// have bits (have >= 32 after refill), further words come from q. It reads
// the same words as a reader of aligned 4-byte words, through the 16-byte
// loads that hold them and one more ahead (the buffer is 16-aligned and
// padded by PackedPad bytes, so those loads stay inside it).
struct Bits {
    Words q;
    u64 buf;
    u32 have;
};

static __device__ __forceinline__ void bits_init(Bits &r, const u8 *base, u64 off) {
    const u64 a = (u64)(base + off);
    words_init(r.q, (const u32x4 *)(a & ~(u64)15));
    for (u32 i = (u32)(a & 15) >> 2; i; i--) words_pop(r.q);
    u32 sh = (u32)(a & 3) * 8;
    r.buf = (u64)words_pop(r.q) >> sh;
    r.have = 32 - sh;
}

static __device__ __forceinline__ void bits_refill(Bits &r) {
    if (r.have < 32) {
        r.buf |= (u64)words_pop(r.q) << r.have;
        r.have += 32;
    }
}

static __device__ __forceinline__ void bits_skip(Bits &r, u32 n) {
    r.buf >>= n;
    r.have -= n;
}

// An output writer for a byte position of any alignment: values collect
// in acc and go out as aligned 16-byte stores. The bytes before the first
// aligned word (head) and after the last (flush) go out one by one, the
// words before the first 16-aligned address (whead) and after the last
// one by one, so threads whose groups meet inside a word never store to
// the same byte.
struct Out {
    u8 *p;
    u64 acc;
    u32 k;     // bytes in acc
    u32 head;  // bytes still to store one by one before p is 4-aligned
    u32 whead; // then words to store one by one before p is 16-aligned
    u64 v0, v1;
    u32 vn; // words collected in v0, v1 for the next 16-byte store
};

static __device__ __forceinline__ void out_init(Out &o, u8 *p) {
    o.p = p;
    o.acc = 0;
    o.k = 0;
    o.head = (u32)(4 - ((u64)p & 3)) & 3;
    o.whead = ((u32)(16 - (((u64)p + o.head) & 15)) & 15) >> 2;
    o.v0 = o.v1 = 0;
    o.vn = 0;
}

static __device__ __forceinline__ void out_word(Out &o, u32 w) {
    if (o.whead) {
        *(u32 *)o.p = w;
        o.p += 4;
        o.whead--;
        return;
    }
    if (o.vn < 2) {
        o.v0 |= (u64)w << (32 * o.vn);
    } else {
        o.v1 |= (u64)w << (32 * (o.vn - 2));
    }
    if (++o.vn == 4) {
        u32x4 x = {(u32)o.v0, (u32)(o.v0 >> 32), (u32)o.v1, (u32)(o.v1 >> 32)};
        *(u32x4 *)o.p = x;
        o.p += 16;
        o.v0 = o.v1 = 0;
        o.vn = 0;
    }
}

// out_put appends the nb (2 or 4) low bytes of v.
static __device__ __forceinline__ void out_put(Out &o, u32 v, u32 nb) {
    o.acc |= (u64)v << (8 * o.k);
    o.k += nb;
    while (o.head && o.k) {
        *o.p++ = (u8)o.acc;
        o.acc >>= 8;
        o.k--;
        o.head--;
    }
    if (o.k >= 4) {
        out_word(o, (u32)o.acc);
        o.acc >>= 32;
        o.k -= 4;
    }
}

static __device__ __forceinline__ void out_flush(Out &o) {
    for (u32 i = 0; i < o.vn; i++) {
        *(u32 *)o.p = (u32)((i < 2 ? o.v0 : o.v1) >> (32 * (i & 1)));
        o.p += 4;
    }
    o.vn = 0;
    while (o.k) {
        *o.p++ = (u8)o.acc;
        o.acc >>= 8;
        o.k--;
    }
}

// CRC-32C (Castagnoli, reflected), slicing by 4.
#define CRC32C_POLY 0x82F63B78u

static __device__ __forceinline__ u32 crc_word(const u32 (*t)[256], u32 crc, u32 w) {
    crc ^= w;
    return t[3][crc & 0xff] ^ t[2][(crc >> 8) & 0xff] ^ t[1][(crc >> 16) & 0xff] ^ t[0][crc >> 24];
}

static __device__ __forceinline__ u32 crc_half(const u32 (*t)[256], u32 crc, u32 h) {
    crc ^= h;
    return (crc >> 16) ^ t[1][crc & 0xff] ^ t[0][(crc >> 8) & 0xff];
}

// Decodes one value: its symbol's 16-bit word from the lookup table, the
// bits it took counted in used. Returns false when the stream cannot hold
// it (status set).
static __device__ __forceinline__ bool next_word(Bits &s, const u32 *lut, u32 mask, u32 &used, u32 bits,
                                                 u32 &word, u32 &st) {
    bits_refill(s);
    u32 e = lut[(u32)s.buf & mask];
    if (e & 0x80000000u) {
        st = ST_NOCODE;
        return false;
    }
    u32 l = e >> 16;
    used += l;
    if (used > bits) {
        st = ST_SHORT;
        return false;
    }
    bits_skip(s, l);
    word = e & 0xffff;
    return true;
}

// Puts a value together from its symbol word and raw bits (reference.go).
static __device__ __forceinline__ u32 assemble16(u32 kind, u32 word, u32 r) {
    if (kind == KIND_BF16) return (r & 0x80) << 8 | word | (r & 0x7f);
    if (kind == KIND_F16) return word | r;
    return word; // V16
}

extern "C" __global__ void __launch_bounds__(THREADS)
glyd_decode(const u8 *packed, const SpanDesc *spans, const u32 *blocks, const u8 *tables, u8 *out, u32 *status,
            u32 *summary, u32 blockBase) {
    __shared__ u32 lut[1 << MAX_LUT_BITS];
    __shared__ u32 crct[4][256];
    __shared__ u32 count[TABLE_COUNTS], firstCode[TABLE_COUNTS], firstIndex[TABLE_COUNTS];

    const u32 t = tid_x();
    const u32 b = blockBase + ctaid_x(); // a launch covers blocks [blockBase, blockBase + grid)
    const u32 si = blocks[2 * b];
    const u32 g = blocks[2 * b + 1] + t;
    const SpanDesc d = spans[si];
    const u16 *tab = (const u16 *)(tables + d.table);

    // CRC tables: crct[k][i] is the CRC of byte i followed by k zero bytes.
    for (u32 i = t; i < 4 * 256; i += THREADS) {
        u32 c = i & 0xff;
        u32 steps = 8 * ((i >> 8) + 1);
        for (u32 j = 0; j < steps; j++) c = (c & 1) ? (c >> 1) ^ CRC32C_POLY : c >> 1;
        crct[i >> 8][i & 0xff] = c;
    }
    if (t < TABLE_COUNTS) count[t] = tab[t];
    __syncthreads();
    // Canonical code: the first code of each length and where that
    // length's symbols start in the sorted list (reference.go).
    if (t == 0) {
        u32 code = 0, idx = 0;
        firstCode[0] = 0;
        firstIndex[0] = 0;
        for (u32 l = 1; l < TABLE_COUNTS; l++) {
            code = (code + count[l - 1]) << 1;
            firstCode[l] = code;
            firstIndex[l] = idx;
            idx += count[l];
        }
    }
    __syncthreads();
    // Lookup table: entry x (the next tb bits of a stream, first bit
    // lowest) is the symbol word | code length << 16; bit 31 marks bits
    // that match no code. With tb = 0 (one symbol) the only entry is that
    // symbol with no bits.
    const u32 tb = d.tb;
    const u16 *words = tab + TABLE_COUNTS;
    for (u32 x = t; x < (1u << tb); x += THREADS) {
        u32 e = 0x80000000u;
        if (tb == 0) {
            e = words[0];
        } else {
            u32 v = __builtin_bitreverse32(x) >> (32 - tb); // the bits as a code, first bit highest
            for (u32 l = 1; l <= tb; l++) {
                u32 c = v >> (tb - l);
                if (c - firstCode[l] < count[l]) {
                    e = words[firstIndex[l] + c - firstCode[l]] | l << 16;
                    break;
                }
            }
        }
        lut[x] = e;
    }
    __syncthreads();
    if (g >= d.groups) return;

    // The group: values [first, last), stream [start, end) of the stream area.
    const u64 first = (u64)g << d.groupLog2;
    const u64 gend = first + (1ull << d.groupLog2);
    const u32 n = (u32)((gend < d.values ? gend : d.values) - first);
    const u32 start = g ? load32u(packed, d.ends + 4 * (u64)(g - 1)) : 0;
    const u32 end = g + 1 < d.groups ? load32u(packed, d.ends + 4 * (u64)g) : d.streamLen;
    const u32 want = load32u(packed, d.crcs + 4 * (u64)g);
    u32 st = ST_OK;
    if (start > end || end > d.streamLen) st = ST_BOUNDS;
    if (d.kind < KIND_BF16 || d.kind > KIND_V16) st = ST_KIND;
    if (st == ST_OK) {
        const u32 bits = 8 * (end - start);
        const u32 mask = (1u << tb) - 1;
        Bits s, r;
        bits_init(s, packed, d.streams + start);
        u32 used = 0;
        u32 crc = 0xffffffffu;
        const u32 kind = d.kind;
        Out o;
        if (kind == KIND_F32) {
            out_init(o, out + d.out + 4 * first);
            bits_init(r, packed, d.raw + 3 * first);
            for (u32 i = 0; i < n; i++) {
                u32 w;
                if (!next_word(s, lut, mask, used, bits, w, st)) break;
                bits_refill(r);
                u32 raw = (u32)r.buf & 0xffffff;
                bits_skip(r, 24);
                u32 v = (raw >> 23) << 31 | w << 16 | (raw & 0x7fffff);
                crc = crc_word(crct, crc, v);
                out_put(o, v, 4);
            }
        } else {
            out_init(o, out + d.out + 2 * first);
            // V16 has no raw plane: an empty reader that never loads.
            const u32 rawBits = kind == KIND_V16 ? 0 : 8;
            if (rawBits) {
                bits_init(r, packed, d.raw + first);
            } else {
                r.q.v = (const u32x4 *)packed; // never read
                r.q.qn = 0;
                r.buf = 0;
                r.have = 32;
            }
            u32 i = 0;
            for (; i + 2 <= n; i += 2) {
                u32 w0, w1;
                if (!next_word(s, lut, mask, used, bits, w0, st)) break;
                if (!next_word(s, lut, mask, used, bits, w1, st)) break;
                bits_refill(r);
                u32 r0 = (u32)r.buf & 0xff;
                bits_skip(r, rawBits);
                u32 r1 = (u32)r.buf & 0xff;
                bits_skip(r, rawBits);
                u32 v = assemble16(kind, w1, r1) << 16 | assemble16(kind, w0, r0);
                crc = crc_word(crct, crc, v);
                out_put(o, v, 4);
            }
            if (st == ST_OK && i < n) { // an odd last value
                u32 w0;
                if (next_word(s, lut, mask, used, bits, w0, st)) {
                    bits_refill(r);
                    u32 v = assemble16(kind, w0, (u32)r.buf & 0xff);
                    crc = crc_half(crct, crc, v);
                    out_put(o, v, 2);
                }
            }
        }
        out_flush(o);
        if (st == ST_OK && (used + 7) / 8 != end - start) st = ST_LEFTOVER;
        if (st == ST_OK && ~crc != want) st = ST_CRC;
    }
    status[d.statusBase + g] = st;
    if (st != ST_OK) {
        __atomic_fetch_add(&summary[0], 1u, __ATOMIC_RELAXED);
        __nvvm_atom_min_gen_ui(&summary[1], d.statusBase + g);
    }
}

// glyd_scatter copies the bytes the CPU produced (the tensors a packed
// file keeps in its meta section, or whole data sections decoded on the
// CPU) from one uploaded blob to their places: the blob opens with one
// (source offset in the blob, destination offset, length) triple of u64
// per block, each at most SCATTER_PIECE bytes. One upload and one launch
// instead of a copy per range (each ~30 µs through the driver).
#define SCATTER_PIECE 65536

extern "C" __global__ void __launch_bounds__(THREADS) glyd_scatter(const u8 *blob, u8 *dst) {
    const u64 *r = (const u64 *)blob + 3 * (u64)ctaid_x();
    const u64 src = r[0], off = r[1], n = r[2];
    for (u64 i = tid_x(); i < n; i += THREADS) dst[off + i] = blob[src + i];
}
