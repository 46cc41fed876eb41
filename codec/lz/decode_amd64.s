//go:build amd64 && !noasm

#include "textflag.h"

// fastState field offsets (decode_amd64.go)
#define S_DST      0
#define S_TOK      8
#define S_OFF0     16
#define S_OFF1     24
#define S_LIT      32
#define S_EXT      40
#define S_OFF2     48
#define S_NTOK     56
#define S_LITLIM   64
#define S_OUTLIM   72
#define S_NEXT     80
#define S_NOFF2    88
#define S_OP       96
#define S_TI       104
#define S_LI       112
#define S_EI       120
#define S_O2       128
#define S_REP      136
#define S_EXTEND   144
#define S_OFF2END  152
#define S_EXTP     160

// Registers through the loop:
//   DX  state          BX  token base     R12 sequence index
//   DI  output         R10 output limit   SI  literals    R11 literal limit
//   R8  off2 cursor    R9  repeat offset  R14 ext cursor
// Per sequence: R13 offset, CX literal length, AX match length, R15
// scratch. Nothing but R14's saved copy is committed until every check of
// the sequence has passed, so an exit leaves the state at the sequence's
// start for the Go step to redo with full checks.

// tinyOff[o], for offsets 1-7: the smallest multiple of o that is at least 8.
DATA ·tinyOff+0(SB)/8, $0x0e0c0a0809080800
GLOBL ·tinyOff(SB), RODATA|NOPTR, $8

// func decodeFast(s *fastState)
TEXT ·decodeFast(SB), NOSPLIT, $0-8
	MOVQ s+0(FP), DX
	MOVQ S_TOK(DX), BX
	MOVQ S_TI(DX), R12
	MOVQ S_DST(DX), DI
	MOVQ S_OUTLIM(DX), R10
	ADDQ DI, R10
	ADDQ S_OP(DX), DI
	MOVQ S_LIT(DX), SI
	MOVQ S_LITLIM(DX), R11
	ADDQ SI, R11
	ADDQ S_LI(DX), SI
	MOVQ S_OFF2(DX), R8
	MOVQ S_NOFF2(DX), R15
	ADDQ R8, R15
	MOVQ R15, S_OFF2END(DX)
	ADDQ S_O2(DX), R8
	MOVQ S_EXT(DX), R14
	MOVQ S_NEXT(DX), R15
	ADDQ R14, R15
	MOVQ R15, S_EXTEND(DX)
	ADDQ S_EI(DX), R14
	MOVQ S_REP(DX), R9

loop:
	MOVQ R14, S_EXTP(DX)
	CMPQ R12, S_NTOK(DX)
	JAE  done

	// Offset: off0 | off1<<8, and off2<<15 when bit 7 of off1 says so,
	// without a branch on that bit (the off2 copy is padded, so the load is
	// always in bounds).
	MOVQ    S_OFF1(DX), R15
	MOVBQZX (R15)(R12*1), R15
	MOVQ    S_OFF0(DX), R13
	MOVBQZX (R13)(R12*1), R13
	MOVQ    R15, AX
	SHRQ    $7, AX
	ANDQ    $0x7f, R15
	SHLQ    $8, R15
	ORQ     R15, R13
	MOVBQZX (R8), CX
	NEGQ    AX
	ANDQ    AX, CX
	SHLQ    $15, CX
	ORQ     CX, R13
	MOVQ    R8, CX
	SUBQ    AX, CX
	CMPQ    CX, S_OFF2END(DX)
	JA      done
	TESTQ   R13, R13
	CMOVQEQ R9, R13
	TESTQ   R13, R13
	JZ      done

	// Token, with ext varints of one or two bytes.
	MOVBQZX (BX)(R12*1), AX
	MOVQ    AX, CX
	SHRQ    $4, CX
	ANDQ    $15, AX
	ADDQ    $4, AX
	CMPQ    CX, $15
	JNE     litlen_ok
	MOVQ    S_EXTEND(DX), R15
	SUBQ    R14, R15
	CMPQ    R15, $4
	JB      done
	MOVBQZX (R14), R15
	INCQ    R14
	TESTQ   $0x80, R15
	JZ      lit_v1
	ANDQ    $0x7f, R15
	ADDQ    R15, CX
	MOVBQZX (R14), R15
	INCQ    R14
	CMPQ    R15, $0x80
	JAE     done
	SHLQ    $7, R15

lit_v1:
	ADDQ R15, CX

litlen_ok:
	CMPQ    AX, $19
	JNE     matchlen_ok
	MOVQ    S_EXTEND(DX), R15
	SUBQ    R14, R15
	CMPQ    R15, $2
	JB      done
	MOVBQZX (R14), R15
	INCQ    R14
	TESTQ   $0x80, R15
	JZ      match_v1
	ANDQ    $0x7f, R15
	ADDQ    R15, AX
	MOVBQZX (R14), R15
	INCQ    R14
	CMPQ    R15, $0x80
	JAE     done
	SHLQ    $7, R15

match_v1:
	ADDQ R15, AX

matchlen_ok:
	// Bounds: literals end 32 bytes short of the stream's end, output ends
	// at the limit (block end or 32 bytes short of the buffer), and the
	// match starts inside the buffer.
	LEAQ (SI)(CX*1), R15
	CMPQ R15, R11
	JA   done
	LEAQ (DI)(CX*1), R15
	ADDQ AX, R15
	CMPQ R15, R10
	JA   done
	LEAQ (DI)(CX*1), R15
	SUBQ R13, R15
	CMPQ R15, S_DST(DX)
	JB   done

	// Commit. (The off2 step is recomputed here rather than carried in a
	// register: none is free, and a round trip through an XMM register
	// would put its latency on the loop-carried path.)
	MOVQ    R13, R9
	MOVQ    S_OFF1(DX), R15
	MOVBQZX (R15)(R12*1), R15
	SHRQ    $7, R15
	ADDQ    R15, R8
	INCQ    R12

	// Literals: 16 bytes at once (most runs are short), more in a loop.
	MOVOU (SI), X0
	MOVOU X0, (DI)
	CMPQ  CX, $16
	JA    lit_long

lit_done:
	ADDQ CX, SI
	ADDQ CX, DI

	// Match from DI-R13: far sources copy 32 bytes at once.
	MOVQ  DI, R15
	SUBQ  R13, R15
	CMPQ  R13, $32
	JB    match_near
	MOVOU (R15), X0
	MOVOU 16(R15), X1
	MOVOU X0, (DI)
	MOVOU X1, 16(DI)
	CMPQ  AX, $32
	JA    match_long
	ADDQ  AX, DI
	JMP   loop

lit_long:
	MOVQ $16, R15

lit_loop:
	MOVOU (SI)(R15*1), X0
	MOVOU X0, (DI)(R15*1)
	ADDQ  $16, R15
	CMPQ  R15, CX
	JB    lit_loop
	JMP   lit_done

match_long:
	MOVQ $32, CX

match_long_loop:
	MOVOU (R15)(CX*1), X0
	MOVOU X0, (DI)(CX*1)
	ADDQ  $16, CX
	CMPQ  CX, AX
	JB    match_long_loop
	ADDQ  AX, DI
	JMP   loop

match_near:
	XORQ CX, CX
	CMPQ R13, $16
	JB   match_short

match16:
	MOVOU (R15)(CX*1), X0
	MOVOU X0, (DI)(CX*1)
	ADDQ  $16, CX
	CMPQ  CX, AX
	JB    match16
	ADDQ  AX, DI
	JMP   loop

match_short:
	CMPQ R13, $8
	JB   match_tiny

match8:
	MOVQ (R15)(CX*1), R13
	MOVQ R13, (DI)(CX*1)
	ADDQ $8, CX
	CMPQ CX, AX
	JB   match8
	ADDQ AX, DI
	JMP  loop

match_tiny:
	// Offsets 1-7 (runs, short patterns): write the first 8 bytes one by
	// one, then copy 8 bytes at a time from the nearest multiple of the
	// period that is at least 8 back (tinyOff).
	MOVB    (R15), CX
	MOVB    CX, (DI)
	MOVB    1(R15), CX
	MOVB    CX, 1(DI)
	MOVB    2(R15), CX
	MOVB    CX, 2(DI)
	MOVB    3(R15), CX
	MOVB    CX, 3(DI)
	MOVB    4(R15), CX
	MOVB    CX, 4(DI)
	MOVB    5(R15), CX
	MOVB    CX, 5(DI)
	MOVB    6(R15), CX
	MOVB    CX, 6(DI)
	MOVB    7(R15), CX
	MOVB    CX, 7(DI)
	LEAQ    ·tinyOff(SB), CX
	MOVBQZX (CX)(R13*1), CX
	MOVQ    DI, R15
	SUBQ    CX, R15
	MOVQ    $8, R13

match_tiny_loop:
	CMPQ R13, AX
	JAE  match_tiny_done
	MOVQ (R15)(R13*1), CX
	MOVQ CX, (DI)(R13*1)
	ADDQ $8, R13
	JMP  match_tiny_loop

match_tiny_done:
	ADDQ AX, DI
	JMP  loop

done:
	SUBQ S_DST(DX), DI
	MOVQ DI, S_OP(DX)
	MOVQ R12, S_TI(DX)
	SUBQ S_LIT(DX), SI
	MOVQ SI, S_LI(DX)
	MOVQ S_EXTP(DX), R14
	SUBQ S_EXT(DX), R14
	MOVQ R14, S_EI(DX)
	SUBQ S_OFF2(DX), R8
	MOVQ R8, S_O2(DX)
	MOVQ R9, S_REP(DX)
	RET

// decodeFastNarrow is decodeFast for Narrow blocks: 16-bit offsets, no
// off2 stream, and R8 holds the off0 base instead of the off2 cursor.
// func decodeFastNarrow(s *fastState)
TEXT ·decodeFastNarrow(SB), NOSPLIT, $0-8
	MOVQ s+0(FP), DX
	MOVQ S_TOK(DX), BX
	MOVQ S_TI(DX), R12
	MOVQ S_DST(DX), DI
	MOVQ S_OUTLIM(DX), R10
	ADDQ DI, R10
	ADDQ S_OP(DX), DI
	MOVQ S_LIT(DX), SI
	MOVQ S_LITLIM(DX), R11
	ADDQ SI, R11
	ADDQ S_LI(DX), SI
	MOVQ S_OFF0(DX), R8
	MOVQ S_EXT(DX), R14
	MOVQ S_NEXT(DX), R15
	ADDQ R14, R15
	MOVQ R15, S_EXTEND(DX)
	ADDQ S_EI(DX), R14
	MOVQ S_REP(DX), R9

loop:
	MOVQ R14, S_EXTP(DX)
	CMPQ R12, S_NTOK(DX)
	JAE  done

	// Offset: off0 | off1<<8; 0 means the repeat.
	MOVQ    S_OFF1(DX), R15
	MOVBQZX (R15)(R12*1), R15
	MOVBQZX (R8)(R12*1), R13
	SHLQ    $8, R15
	ORQ     R15, R13
	TESTQ   R13, R13
	CMOVQEQ R9, R13
	TESTQ   R13, R13
	JZ      done

	// Token, with ext varints of one or two bytes.
	MOVBQZX (BX)(R12*1), AX
	MOVQ    AX, CX
	SHRQ    $4, CX
	ANDQ    $15, AX
	ADDQ    $4, AX
	CMPQ    CX, $15
	JNE     litlen_ok
	MOVQ    S_EXTEND(DX), R15
	SUBQ    R14, R15
	CMPQ    R15, $4
	JB      done
	MOVBQZX (R14), R15
	INCQ    R14
	TESTQ   $0x80, R15
	JZ      lit_v1
	ANDQ    $0x7f, R15
	ADDQ    R15, CX
	MOVBQZX (R14), R15
	INCQ    R14
	CMPQ    R15, $0x80
	JAE     done
	SHLQ    $7, R15

lit_v1:
	ADDQ R15, CX

litlen_ok:
	CMPQ    AX, $19
	JNE     matchlen_ok
	MOVQ    S_EXTEND(DX), R15
	SUBQ    R14, R15
	CMPQ    R15, $2
	JB      done
	MOVBQZX (R14), R15
	INCQ    R14
	TESTQ   $0x80, R15
	JZ      match_v1
	ANDQ    $0x7f, R15
	ADDQ    R15, AX
	MOVBQZX (R14), R15
	INCQ    R14
	CMPQ    R15, $0x80
	JAE     done
	SHLQ    $7, R15

match_v1:
	ADDQ R15, AX

matchlen_ok:
	// Bounds: literals end 32 bytes short of the stream's end, output ends
	// at the limit (block end or 32 bytes short of the buffer), and the
	// match starts inside the buffer.
	LEAQ (SI)(CX*1), R15
	CMPQ R15, R11
	JA   done
	LEAQ (DI)(CX*1), R15
	ADDQ AX, R15
	CMPQ R15, R10
	JA   done
	LEAQ (DI)(CX*1), R15
	SUBQ R13, R15
	CMPQ R15, S_DST(DX)
	JB   done

	// Commit.
	MOVQ R13, R9
	INCQ R12

	// Literals: 16 bytes at once (most runs are short), more in a loop.
	MOVOU (SI), X0
	MOVOU X0, (DI)
	CMPQ  CX, $16
	JA    lit_long

lit_done:
	ADDQ CX, SI
	ADDQ CX, DI

	// Match from DI-R13: far sources copy 32 bytes at once.
	MOVQ  DI, R15
	SUBQ  R13, R15
	CMPQ  R13, $32
	JB    match_near
	MOVOU (R15), X0
	MOVOU 16(R15), X1
	MOVOU X0, (DI)
	MOVOU X1, 16(DI)
	CMPQ  AX, $32
	JA    match_long
	ADDQ  AX, DI
	JMP   loop

lit_long:
	MOVQ $16, R15

lit_loop:
	MOVOU (SI)(R15*1), X0
	MOVOU X0, (DI)(R15*1)
	ADDQ  $16, R15
	CMPQ  R15, CX
	JB    lit_loop
	JMP   lit_done

match_long:
	MOVQ $32, CX

match_long_loop:
	MOVOU (R15)(CX*1), X0
	MOVOU X0, (DI)(CX*1)
	ADDQ  $16, CX
	CMPQ  CX, AX
	JB    match_long_loop
	ADDQ  AX, DI
	JMP   loop

match_near:
	XORQ CX, CX
	CMPQ R13, $16
	JB   match_short

match16:
	MOVOU (R15)(CX*1), X0
	MOVOU X0, (DI)(CX*1)
	ADDQ  $16, CX
	CMPQ  CX, AX
	JB    match16
	ADDQ  AX, DI
	JMP   loop

match_short:
	CMPQ R13, $8
	JB   match_tiny

match8:
	MOVQ (R15)(CX*1), R13
	MOVQ R13, (DI)(CX*1)
	ADDQ $8, CX
	CMPQ CX, AX
	JB   match8
	ADDQ AX, DI
	JMP  loop

match_tiny:
	// Offsets 1-7 (runs, short patterns): write the first 8 bytes one by
	// one, then copy 8 bytes at a time from the nearest multiple of the
	// period that is at least 8 back (tinyOff).
	MOVB    (R15), CX
	MOVB    CX, (DI)
	MOVB    1(R15), CX
	MOVB    CX, 1(DI)
	MOVB    2(R15), CX
	MOVB    CX, 2(DI)
	MOVB    3(R15), CX
	MOVB    CX, 3(DI)
	MOVB    4(R15), CX
	MOVB    CX, 4(DI)
	MOVB    5(R15), CX
	MOVB    CX, 5(DI)
	MOVB    6(R15), CX
	MOVB    CX, 6(DI)
	MOVB    7(R15), CX
	MOVB    CX, 7(DI)
	LEAQ    ·tinyOff(SB), CX
	MOVBQZX (CX)(R13*1), CX
	MOVQ    DI, R15
	SUBQ    CX, R15
	MOVQ    $8, R13

match_tiny_loop:
	CMPQ R13, AX
	JAE  match_tiny_done
	MOVQ (R15)(R13*1), CX
	MOVQ CX, (DI)(R13*1)
	ADDQ $8, R13
	JMP  match_tiny_loop

match_tiny_done:
	ADDQ AX, DI
	JMP  loop

done:
	SUBQ S_DST(DX), DI
	MOVQ DI, S_OP(DX)
	MOVQ R12, S_TI(DX)
	SUBQ S_LIT(DX), SI
	MOVQ SI, S_LI(DX)
	MOVQ S_EXTP(DX), R14
	SUBQ S_EXT(DX), R14
	MOVQ R14, S_EI(DX)
	MOVQ R9, S_REP(DX)
	RET
