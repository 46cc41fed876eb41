//go:build amd64 && !noasm

#include "textflag.h"

// func decodePair4096(s *pairState)
//
// Registers: R8 lut, R9 src, R10 out (group b at 4096(R10)), R13 state;
// SI/DI bit positions, BX/DX value indexes, R11/R12 bit buffers of groups a
// and b; AX and CX scratch.
//
// One step of a group: e = lut[buf & 4095]; buf >>= e&63 (SHRX masks the
// count); bp += e&63; store the entry's symbol bytes (e>>16: five, and
// zeros the next store overwrites) at out[i]; i += (e>>6)&7.
#define STEP(buf, bp, idx, disp) \
	MOVQ buf, AX; \
	ANDQ $0xfff, AX; \
	MOVQ (R8)(AX*8), AX; \
	SHRXQ AX, buf, buf; \
	MOVQ AX, CX; \
	ANDQ $63, CX; \
	ADDQ CX, bp; \
	MOVQ AX, CX; \
	SHRQ $16, CX; \
	MOVQ CX, disp(R10)(idx*1); \
	SHRQ $6, AX; \
	ANDQ $7, AX; \
	ADDQ AX, idx

TEXT ·decodePair4096(SB), NOSPLIT, $0-8
	MOVQ s+0(FP), R13
	MOVQ 0(R13), R8
	MOVQ 8(R13), R9
	MOVQ 16(R13), R10
	MOVQ 40(R13), SI
	MOVQ 48(R13), DI
	MOVQ 56(R13), BX
	MOVQ 64(R13), DX

loop:
	CMPQ BX, 32(R13)
	JGT  done
	CMPQ DX, 32(R13)
	JGT  done
	CMPQ SI, 24(R13)
	JHI  done
	CMPQ DI, 24(R13)
	JHI  done

	// Refill both buffers: buf = load64(src + bp>>3) >> (bp&7).
	MOVQ  SI, AX
	SHRQ  $3, AX
	MOVQ  (R9)(AX*1), R11
	MOVQ  SI, CX
	ANDQ  $7, CX
	SHRXQ CX, R11, R11
	MOVQ  DI, AX
	SHRQ  $3, AX
	MOVQ  (R9)(AX*1), R12
	MOVQ  DI, CX
	ANDQ  $7, CX
	SHRXQ CX, R12, R12

	STEP(R11, SI, BX, 0)
	STEP(R12, DI, DX, 4096)
	STEP(R11, SI, BX, 0)
	STEP(R12, DI, DX, 4096)
	STEP(R11, SI, BX, 0)
	STEP(R12, DI, DX, 4096)
	STEP(R11, SI, BX, 0)
	STEP(R12, DI, DX, 4096)
	JMP loop

done:
	MOVQ SI, 40(R13)
	MOVQ DI, 48(R13)
	MOVQ BX, 56(R13)
	MOVQ DX, 64(R13)
	RET

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
