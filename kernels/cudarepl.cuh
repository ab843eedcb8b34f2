// cudarepl.cuh is the course's header: the device helpers that several
// kernel files use, each written once, as llm.c's dev/cuda keeps them in
// common.h. They are PTX (inline asm), so no CUDA toolkit header is needed.
// NVRTC is handed this file by name with every course kernel file and with
// a learner's own, so #include "cudarepl.cuh" works on a bare driver and
// NVRTC. Every helper is static and forced inline: a kernel compiles as if
// its code were written in place, and a file that uses none pays nothing.
#ifndef CUDAREPL_CUH
#define CUDAREPL_CUH

#define NEG_INF __int_as_float(0xff800000)  // −∞: the max of nothing, and exp(−∞) = 0

// h2f and f2h convert fp16 bits to float and back (round to nearest even).
static __device__ __forceinline__ float h2f(unsigned short h) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
    return f;
}
static __device__ __forceinline__ unsigned short f2h(float f) {
    unsigned short h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
    return h;
}

// pack2 rounds two floats to fp16 and packs them, lo in the low half.
static __device__ __forceinline__ unsigned pack2(float lo, float hi) {
    unsigned r;
    asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
    return r;
}

// smem32 is the 32-bit shared-memory address of p, as ldmatrix, cp.async,
// mapa and the TMA take it.
static __device__ __forceinline__ unsigned smem32(const void* p) {
    unsigned r;
    asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(r) : "l"(p));
    return r;
}

// mma16816 is d += a·b for a 16×16 tile of A and a 16×8 tile of B on the
// tensor cores, fp16 in, fp32 accumulate: a, b and d are this lane's parts
// of the fragments, laid out as mma.sync lays them out.
static __device__ __forceinline__ void mma16816(float* d, const unsigned* a, const unsigned* b) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// TensorMap is a CUtensorMap, built by the driver and passed by value.
struct __align__(64) TensorMap { unsigned long long v[16]; };

// Hopper (sm_90a) only: the tensor memory accelerator (TMA) copies a whole
// box of a matrix into shared memory on its own, and an mbarrier in shared
// memory counts the bytes that land; wgmma, the warpgroup-wide product,
// reads its operands from shared memory through descriptors.
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)

// mbar_init sets up the mbarrier at shared address bar to wait for count
// arrivals a phase.
static __device__ __forceinline__ void mbar_init(unsigned bar, unsigned count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count));
}

// mbar_wait spins until the barrier's phase with this parity has completed.
static __device__ __forceinline__ void mbar_wait(unsigned bar, unsigned parity) {
    unsigned done;
    do {
        asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                     : "=r"(done) : "r"(bar), "r"(parity) : "memory");
    } while (!done);
}

// mbar_arrive counts this thread in at the barrier.
static __device__ __forceinline__ void mbar_arrive(unsigned bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
}

// mbar_expect tells the barrier how many bytes the copies that complete its
// phase will bring, and arrives.
static __device__ __forceinline__ void mbar_expect(unsigned bar, unsigned bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
}

// tma_load copies the box at (col, row) of a 2-D tensor map into shared
// memory at dst; tma_load3 the box at (col, row) of matrix z of a 3-D one.
// The barrier counts their bytes in.
static __device__ __forceinline__ void tma_load(unsigned dst, const TensorMap* map, int col, int row, unsigned bar) {
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
                 ::"r"(dst), "l"(map), "r"(col), "r"(row), "r"(bar) : "memory");
}
static __device__ __forceinline__ void tma_load3(unsigned dst, const TensorMap* map, int col, int row, int z, unsigned bar) {
    asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], [%5];"
                 ::"r"(dst), "l"(map), "r"(col), "r"(row), "r"(z), "r"(bar) : "memory");
}

// desc128 describes a 128-byte-swizzled tile at shared address addr to
// wgmma: lead and stride are the byte distances between 8×8 core-matrix
// groups along the operand's two dimensions.
static __device__ __forceinline__ unsigned long long desc128(unsigned addr, unsigned lead, unsigned stride) {
    return (unsigned long long)((addr & 0x3FFFF) >> 4) | (unsigned long long)(lead >> 4) << 16 |
           (unsigned long long)(stride >> 4) << 32 | 1ull << 62;
}

// wgmma's accumulators, a thread's share of a 64×N fp32 tile in N/2
// registers d[0…]: WG_RN lists them as the instruction's operands %0 to
// %(N/2 − 1), and WG_FN binds them, read and written, to d.
#define WG_F8(i) "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), "+f"(d[i + 6]), "+f"(d[i + 7])
#define WG_F32 WG_F8(0), WG_F8(8), WG_F8(16), WG_F8(24)
#define WG_F64 WG_F32, WG_F8(32), WG_F8(40), WG_F8(48), WG_F8(56)
#define WG_F128 WG_F64, WG_F8(64), WG_F8(72), WG_F8(80), WG_F8(88), WG_F8(96), WG_F8(104), WG_F8(112), WG_F8(120)
#define WG_R32 "%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31"
#define WG_R64 WG_R32 ",%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63"
#define WG_R128 WG_R64 ",%64,%65,%66,%67,%68,%69,%70,%71,%72,%73,%74,%75,%76,%77,%78,%79,%80,%81,%82,%83,%84,%85,%86,%87,%88,%89,%90,%91,%92,%93,%94,%95," \
                       "%96,%97,%98,%99,%100,%101,%102,%103,%104,%105,%106,%107,%108,%109,%110,%111,%112,%113,%114,%115,%116,%117,%118,%119,%120,%121,%122,%123,%124,%125,%126,%127"

#endif  // __CUDA_ARCH_FEAT_SM90_ALL
#endif  // CUDAREPL_CUH
