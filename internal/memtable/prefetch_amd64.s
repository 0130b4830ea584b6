#include "textflag.h"

// func prefetchNode(p unsafe.Pointer)
TEXT ·prefetchNode(SB), NOSPLIT, $0-8
	MOVQ p+0(FP), AX
	PREFETCHT0 (AX)
	PREFETCHT0 63(AX)
	RET
