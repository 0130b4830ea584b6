package compact

import "math"

// Defaults of Options, RocksDB's.
const (
	DefaultL0CompactionTrigger      = 4
	DefaultLevelMultiplier          = 10
	DefaultMaxBytesForLevelBase     = 256 << 20
	DefaultTargetFileSizeBase       = 64 << 20
	DefaultTargetFileSizeMultiplier = 1
	// DefaultMaxCompactionBytesFactor times the target file size is the
	// default MaxCompactionBytes.
	DefaultMaxCompactionBytesFactor = 25
)

// Options shape the LSM tree. The zero value of each field means its
// default (see WithDefaults); the engine passes its own options through.
// Options are plain values, safe to share.
type Options struct {
	// L0CompactionTrigger is the number of L0 files at which L0 is
	// compacted into L1 (score 1).
	L0CompactionTrigger int
	// LevelMultiplier is the ratio between the target sizes of consecutive
	// levels below L1.
	LevelMultiplier float64
	// MaxBytesForLevelBase is the target size of L1; Ln's is
	// MaxBytesForLevelBase * LevelMultiplier^(n-1).
	MaxBytesForLevelBase uint64
	// TargetFileSizeBase is the target size of a compaction output file in
	// L1 (and of flushes); in Ln it is TargetFileSizeBase *
	// TargetFileSizeMultiplier^(n-1).
	TargetFileSizeBase uint64
	// TargetFileSizeMultiplier is the ratio between the target file sizes
	// of consecutive levels.
	TargetFileSizeMultiplier int
	// MaxCompactionBytes bounds how far Pick grows a compaction beyond what
	// it must include (default 25 times the target file size base).
	MaxCompactionBytes uint64
}

// WithDefaults returns o with every zero or negative field replaced by its
// default.
func (o Options) WithDefaults() Options {
	if o.L0CompactionTrigger <= 0 {
		o.L0CompactionTrigger = DefaultL0CompactionTrigger
	}
	if o.LevelMultiplier <= 0 {
		o.LevelMultiplier = DefaultLevelMultiplier
	}
	if o.MaxBytesForLevelBase == 0 {
		o.MaxBytesForLevelBase = DefaultMaxBytesForLevelBase
	}
	if o.TargetFileSizeBase == 0 {
		o.TargetFileSizeBase = DefaultTargetFileSizeBase
	}
	if o.TargetFileSizeMultiplier <= 0 {
		o.TargetFileSizeMultiplier = DefaultTargetFileSizeMultiplier
	}
	if o.MaxCompactionBytes == 0 {
		o.MaxCompactionBytes = satMul(o.TargetFileSizeBase, DefaultMaxCompactionBytesFactor)
	}
	return o
}

// MaxBytesForLevel returns the target size of level (L0's is that of L1,
// though L0 is scored by file count).
func (o Options) MaxBytesForLevel(level int) uint64 {
	o = o.WithDefaults()
	return satMul(o.MaxBytesForLevelBase, math.Pow(o.LevelMultiplier, float64(max(level, 1)-1)))
}

// TargetFileSize returns the target size of an output file in level.
func (o Options) TargetFileSize(level int) uint64 {
	o = o.WithDefaults()
	return satMul(o.TargetFileSizeBase, math.Pow(float64(o.TargetFileSizeMultiplier), float64(max(level, 1)-1)))
}

// satMul returns x*f rounded down, saturating at the largest uint64, so deep
// levels with large multipliers do not wrap around.
func satMul[F float64 | int](x uint64, f F) uint64 {
	p := float64(x) * float64(f)
	if p >= math.MaxUint64 {
		return math.MaxUint64
	}
	return uint64(p)
}
