package memtable

import "github.com/shaledb/shale/internal/base"

func baseSeq(s uint64) base.SeqNum { return base.SeqNum(s) }
