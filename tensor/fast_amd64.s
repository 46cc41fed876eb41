//go:build amd64 && !noasm

#include "textflag.h"

// func combineSSE(out, syms, raw unsafe.Pointer, n int, shift, m1, m2 uint64)
TEXT ·combineSSE(SB), NOSPLIT, $0-56
	MOVQ out+0(FP), DI
	MOVQ syms+8(FP), R8
	MOVQ raw+16(FP), SI
	MOVQ n+24(FP), CX
	MOVQ shift+32(FP), AX
	MOVQ AX, X5
	MOVQ m1+40(FP), AX
	MOVQ AX, X6
	PUNPCKLQDQ X6, X6
	MOVQ m2+48(FP), AX
	MOVQ AX, X7
	PUNPCKLQDQ X7, X7
	XORQ BX, BX

cloop:
	CMPQ BX, CX
	JGE  cdone
	MOVQ     (R8)(BX*1), X0
	PMOVZXBW X0, X0
	PSLLW    X5, X0
	MOVQ     (SI)(BX*1), X1
	PMOVZXBW X1, X1
	MOVOU    X1, X2
	PAND     X6, X1
	PAND     X7, X2
	PSLLW    $8, X2
	POR      X1, X0
	POR      X2, X0
	MOVOU    X0, (DI)(BX*2)
	ADDQ     $8, BX
	JMP      cloop

cdone:
	RET

// func combineAVX2(out, syms, raw unsafe.Pointer, n int, shift, m1, m2 uint64)
//
// combineSSE sixteen words at a time (n a multiple of 16).
TEXT ·combineAVX2(SB), NOSPLIT, $0-56
	MOVQ         out+0(FP), DI
	MOVQ         syms+8(FP), R8
	MOVQ         raw+16(FP), SI
	MOVQ         n+24(FP), CX
	MOVQ         shift+32(FP), AX
	MOVQ         AX, X5
	VPBROADCASTQ m1+40(FP), Y6
	VPBROADCASTQ m2+48(FP), Y7
	XORQ         BX, BX

aloop:
	CMPQ      BX, CX
	JGE       adone
	VPMOVZXBW (R8)(BX*1), Y0
	VPSLLW    X5, Y0, Y0
	VPMOVZXBW (SI)(BX*1), Y1
	VPAND     Y6, Y1, Y2
	VPAND     Y7, Y1, Y3
	VPSLLW    $8, Y3, Y3
	VPOR      Y2, Y0, Y0
	VPOR      Y3, Y0, Y0
	VMOVDQU   Y0, (DI)(BX*2)
	ADDQ      $16, BX
	JMP       aloop

adone:
	VZEROUPPER
	RET

// func decodeLanes(s *laneState)
//
// Four groups interleaved, each with its own table (groups of different
// spans share the loop): a lookup's latency (mask, load, shift) is what
// bounds one stream, and four streams keep the core busy while each waits.
// Registers: BP the state (tables and masks are read from it: loads off
// the critical path); R8-R11 bit buffers; R12 R13 SI DI bit positions
// (absolute: the payload's address × 8 plus the bit); BX DX R14 R15 output
// pointers of lanes 0-3; AX and CX scratch. The caller computes how many
// iterations stay within every lane's group and payload (each takes at
// most 48 bits and 20 symbols a lane), so the loop checks nothing.
//
// One step: e = lut[buf & mask]; buf >>= e (SHRX takes the low 6 bits:
// the length byte); bp += e&0xff; store the symbol bytes (e>>16) at op;
// op += the count byte.
#define LSTEP(buf, bp, op, maskoff, lutoff) \
	MOVL    buf, AX; \
	ANDL    maskoff(BP), AX; \
	MOVQ    lutoff(BP), CX; \
	MOVQ    (CX)(AX*8), AX; \
	SHRXQ   AX, buf, buf; \
	MOVBLZX AL, CX; \
	ADDQ    CX, bp; \
	MOVBLZX AH, CX; \
	SHRQ    $16, AX; \
	MOVQ    AX, (op); \
	ADDQ    CX, op

// buf = the 8 bytes at bp>>3, shifted past bp's bits within the byte;
// and a prefetch of the stream 256 bytes on: four streams (and the raw
// planes and outputs beside them) outrun the hardware's prefetchers
// (corpus weights decode 15-20% faster, alternating runs).
#define LREFILL(buf, bp) \
	MOVQ  bp, AX; \
	SHRQ  $3, AX; \
	MOVQ  (AX), buf; \
	PREFETCHT0 256(AX); \
	MOVL  bp, CX; \
	ANDL  $7, CX; \
	SHRXQ CX, buf, buf

// One lookup in each lane.
#define LROUND \
	LSTEP(R8, R12, BX, 48, 16); \
	LSTEP(R9, R13, DX, 56, 24); \
	LSTEP(R10, SI, R14, 64, 32); \
	LSTEP(R11, DI, R15, 72, 40)

// laneState: iters 0, out 8, lut 16-40, mask 48-72, bp 80-104, at 112-136.
TEXT ·decodeLanes(SB), NOSPLIT, $8-8
	MOVQ s+0(FP), BP
	MOVQ 80(BP), R12
	MOVQ 88(BP), R13
	MOVQ 96(BP), SI
	MOVQ 104(BP), DI
	MOVQ 8(BP), CX
	MOVQ 112(BP), BX
	ADDQ CX, BX
	MOVQ 120(BP), DX
	ADDQ CX, DX
	MOVQ 128(BP), R14
	ADDQ CX, R14
	MOVQ 136(BP), R15
	ADDQ CX, R15

lloop:
	LREFILL(R8, R12)
	LREFILL(R9, R13)
	LREFILL(R10, SI)
	LREFILL(R11, DI)
	LROUND
	LROUND
	LROUND
	LROUND
	DECQ 0(BP)
	JNZ  lloop

	MOVQ R12, 80(BP)
	MOVQ R13, 88(BP)
	MOVQ SI, 96(BP)
	MOVQ DI, 104(BP)
	MOVQ 8(BP), CX
	SUBQ CX, BX
	MOVQ BX, 112(BP)
	SUBQ CX, DX
	MOVQ DX, 120(BP)
	SUBQ CX, R14
	MOVQ R14, 128(BP)
	SUBQ CX, R15
	MOVQ R15, 136(BP)
	RET
