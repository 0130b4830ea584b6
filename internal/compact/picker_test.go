package compact

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/manifest"
	"github.com/stretchr/testify/require"
)

// parseVersion builds a version from lines "L<level> <file> <file>...",
// where a file is num:smallest-largest, optionally followed by /size
// (default 1) and * (CompactionInProgress). Keys and sequence numbers are
// the file number, so a higher number is a newer L0 file.
func parseVersion(t *testing.T, spec string) *manifest.Version {
	t.Helper()
	v := &manifest.Version{}
	for _, line := range strings.Split(strings.TrimSpace(spec), "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		level, err := strconv.Atoi(strings.TrimPrefix(fields[0], "L"))
		require.NoError(t, err, line)
		for _, tok := range fields[1:] {
			f := &manifest.FileMetadata{Size: 1}
			if strings.HasSuffix(tok, "*") {
				f.CompactionInProgress = true
				tok = strings.TrimSuffix(tok, "*")
			}
			if i := strings.IndexByte(tok, '/'); i >= 0 {
				size, err := strconv.ParseFloat(tok[i+1:], 64)
				require.NoError(t, err, tok)
				f.Size = uint64(size)
				tok = tok[:i]
			}
			numStr, keys, ok := strings.Cut(tok, ":")
			require.True(t, ok, tok)
			num, err := strconv.ParseUint(numStr, 10, 64)
			require.NoError(t, err, tok)
			lo, hi, ok := strings.Cut(keys, "-")
			require.True(t, ok, tok)
			seq := base.SeqNum(num)
			f.FileNum = manifest.FileNum(num)
			f.Smallest = base.MakeInternalKey([]byte(lo), seq, base.KindSet)
			f.Largest = base.MakeInternalKey([]byte(hi), seq, base.KindSet)
			f.SmallestSeqNum, f.LargestSeqNum = seq, seq
			v.Levels[level] = append(v.Levels[level], f)
		}
	}
	require.NoError(t, v.CheckConsistency(), "test version:\n%s", spec)
	return v
}

// testOpts: L1 targets 100 bytes, L2 1000, ...; files target 10 bytes, so
// an output may overlap 100 bytes of grandparents.
var testOpts = Options{
	L0CompactionTrigger:  2,
	LevelMultiplier:      10,
	MaxBytesForLevelBase: 100,
	TargetFileSizeBase:   10,
	MaxCompactionBytes:   1000,
}

func describe(c *Compaction) string {
	if c == nil {
		return "nil"
	}
	return c.String()
}

func TestOptions(t *testing.T) {
	d := Options{}.WithDefaults()
	require.Equal(t, Options{
		L0CompactionTrigger:      4,
		LevelMultiplier:          10,
		MaxBytesForLevelBase:     256 << 20,
		TargetFileSizeBase:       64 << 20,
		TargetFileSizeMultiplier: 1,
		MaxCompactionBytes:       25 * 64 << 20,
	}, d)
	require.Equal(t, uint64(256<<20), d.MaxBytesForLevel(0))
	require.Equal(t, uint64(256<<20), d.MaxBytesForLevel(1))
	require.Equal(t, uint64(2560<<20), d.MaxBytesForLevel(2))
	require.Equal(t, uint64(256<<20)*100000, d.MaxBytesForLevel(6))
	require.Equal(t, uint64(64<<20), d.TargetFileSize(5))
	o := Options{TargetFileSizeBase: 2, TargetFileSizeMultiplier: 3, MaxBytesForLevelBase: math.MaxUint64 / 2}
	require.Equal(t, uint64(2), o.TargetFileSize(1))
	require.Equal(t, uint64(18), o.TargetFileSize(3))
	require.Equal(t, uint64(math.MaxUint64), o.MaxBytesForLevel(3), "saturates")
	require.Equal(t, uint64(50), o.WithDefaults().MaxCompactionBytes)
}

func TestScores(t *testing.T) {
	v := parseVersion(t, `
L0 3:a-b 2:a-b 1:a-b*
L1 4:a-b/50 5:c-d/100* 6:e-f/25
L2 7:a-z/500
L6 8:a-z/1000000`)
	require.Equal(t, [manifest.NumLevels]float64{1, 0.75, 0.5, 0, 0, 0, 0}, Scores(v, testOpts))
}

func TestPick(t *testing.T) {
	for _, tc := range []struct {
		name    string
		version string
		opts    func(*Options)
		want    string
	}{
		{"empty", ``, nil, "nil"},
		{"L0 below trigger", `L0 1:a-b`, nil, "nil"},
		{"L0 trivial move", `L0 2:c-d 1:a-b`, nil, "L0->L1 [000001] + [] score=1.00 trivial bottommost"},
		{"L0 transitive", `
L0 3:d-f 2:b-d 1:a-b
L1 5:a-a 6:e-g 7:h-i`, nil, "L0->L1 [000003 000002 000001] + [000005 000006] score=1.50 bottommost"},
		{"L0 skips a seed that overlaps a running compaction", `L0 3:m-n 2:a-c 1:b-d*`, nil,
			"L0->L1 [000003] + [] score=1.00 trivial bottommost"},
		{"L0 expansion takes newer L0 files under the same L1 files", `
L0 3:c-d 2:a-b
L1 1:b-c`, nil, "L0->L1 [000003 000002] + [000001] score=1.00 bottommost"},
		{"L0 blocked by a running output-level file", `
L0 2:a-c 1:b-d
L1 5:a-z*`, nil, "nil"},
		{"L0 not trivial when output level overlaps", `
L0 2:x-y 1:a-b
L1 5:b-c`, nil, "L0->L1 [000001] + [000005] score=1.00 bottommost"},
		{"L0 not bottommost", `
L0 2:a-b 1:a-c
L5 9:b-b`, nil, "L0->L1 [000002 000001] + [] score=1.00"},
		{"L1 by size, min overlap ratio", `
L1 1:a-b/60 2:c-d/60
L2 3:a-a/50 4:c-c/10`, nil, "L1->L2 [000002] + [000004] score=1.20 bottommost"},
		{"L1 expansion adds inputs, not output files", `
L1 1:b-c/100 2:e-f/100
L2 3:a-g/10`, nil, "L1->L2 [000001 000002] + [000003] score=2.00 bottommost"},
		{"L1 expansion limited by MaxCompactionBytes", `
L1 1:b-c/100 2:e-f/100
L2 3:a-g/10`, func(o *Options) { o.MaxCompactionBytes = 150 }, "L1->L2 [000001] + [000003] score=2.00 bottommost"},
		{"L1 no expansion when it would add output files", `
L1 1:b-c/100 2:e-f/100
L2 3:a-d/10 4:f-g/10`, nil, "L1->L2 [000001] + [000003] score=2.00 bottommost"},
		{"L1 trivial move with grandparents at the limit", `
L1 1:a-b/200
L3 5:a-c/100`, nil, "L1->L2 [000001] + [] score=2.00 trivial"},
		{"L1 grandparents above the limit block a trivial move", `
L1 1:a-b/200
L3 5:a-c/101`, nil, "L1->L2 [000001] + [] score=2.00"},
		{"L1 in-progress seed skipped", `L1 1:a-b/100* 2:c-d/150`, nil,
			"L1->L2 [000002] + [] score=1.50 trivial bottommost"},
		{"L1 seed blocked by running output file", `
L1 1:a-b/100 2:c-d/100
L2 3:a-a/1* 4:c-c/50`, nil, "L1->L2 [000002] + [000004] score=2.00 bottommost"},
		{"highest score wins", `
L0 3:a-b 2:a-b 1:a-b
L1 4:c-d/300`, nil, "L1->L2 [000004] + [] score=3.00 trivial bottommost"},
		{"ties go to the upper level", `
L0 3:a-b 2:a-b 1:a-b
L1 4:c-d/150`, nil, "L0->L1 [000003 000002 000001] + [] score=1.50 bottommost"},
		{"falls back to the next level when the best is blocked", `
L0 3:a-b 2:a-b 1:a-b*
L1 4:a-d/200*  5:e-f/150`, nil, "L1->L2 [000005] + [] score=1.50 trivial bottommost"},
		{"last level is never picked", `L6 1:a-b/1000000000000`, nil, "nil"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := parseVersion(t, tc.version)
			opts := testOpts
			if tc.opts != nil {
				tc.opts(&opts)
			}
			require.Equal(t, tc.want, describe(Pick(v, opts)))
		})
	}
}

func TestPickManual(t *testing.T) {
	k := func(s string) []byte { return []byte(s) }
	for _, tc := range []struct {
		name       string
		version    string
		level      int
		start, end []byte
		want       string
	}{
		{"empty tree below goes to the bottom", `L0 2:a-m 1:x-y`, 0, nil, nil,
			"L0->L6 [000002 000001] + [] score=1.00 manual bottommost"},
		{"stops at the first level with data in range", `
L0 5:a-m
L3 2:c-d`, 0, nil, nil, "L0->L3 [000005] + [000002] score=0.50 manual bottommost"},
		{"data outside the range does not stop it", `
L0 5:a-m
L2 2:x-z`, 0, nil, nil, "L0->L6 [000005] + [] score=0.50 manual bottommost"},
		{"the next level when it has data", `
L1 5:a-m
L2 2:b-c`, 1, nil, nil, "L1->L2 [000005] + [000002] score=0.01 manual bottommost"},
		{"L1 range with expansion", `
L1 1:a-b 2:c-d 3:e-f
L2 4:d-e`, 1, k("c"), k("d"), "L1->L2 [000002 000003] + [000004] score=0.03 manual bottommost"},
		{"L1 range boundaries inclusive", `L1 1:a-b 2:c-d 3:e-f`, 1, k("b"), k("c"),
			"L1->L6 [000001 000002] + [] score=0.03 manual bottommost"},
		{"a single file is rewritten, not moved", `L1 1:a-b`, 1, nil, nil, "L1->L6 [000001] + [] score=0.01 manual bottommost"},
		{"nothing in range", `L1 1:a-b 3:e-f`, 1, k("c"), k("d"), "nil"},
		{"empty level", `L1 1:a-b`, 2, nil, nil, "nil"},
		{"nothing to do", `L1 1:a-b`, 0, nil, nil, "nil"},
		{"last level into itself", `L6 1:a-b 2:c-d 3:e-f`, 6, k("b"), k("c"), "L6->L6 [000001 000002] + [] score=0.00 manual bottommost"},
		{"in progress input", `L1 1:a-b* 2:c-d`, 1, nil, nil, "nil"},
		{"in progress output-level file", `
L1 1:a-b 2:c-d
L2 3:b-c*`, 1, k("a"), k("a"), "nil"},
		{"not bottommost", `
L2 1:a-b
L3 2:b-c
L5 3:a-a`, 2, nil, nil, "L2->L3 [000001] + [000002] score=0.00 manual"},
		{"level out of range", `L1 1:a-b`, manifest.NumLevels, nil, nil, "nil"},
		{"negative level", `L1 1:a-b`, -1, nil, nil, "nil"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := parseVersion(t, tc.version)
			require.Equal(t, tc.want, describe(PickManual(v, testOpts, tc.level, tc.start, tc.end)))
		})
	}
}

func TestShouldStopBefore(t *testing.T) {
	// Grandparents (L3) of 60 bytes each; outputs may overlap 100. The L2
	// file makes L2 the output level.
	v := parseVersion(t, `
L1 1:a-m
L2 2:a-a
L3 11:b-c/60 12:e-f/60 13:h-i/60 14:k-l/60`)
	for _, tc := range []struct {
		name   string
		keys   string
		finish string // FinishOutput after this key
		want   string
	}{
		{"cuts when overlap exceeds the limit", "a d g j m", "", "- - stop - stop"},
		{"FinishOutput resets the count", "a d g j m", "d", "- - - stop -"},
		{"grandparents before the first key do not count", "j m", "", "- -"},
		{"keys inside a grandparent", "a b bb c ca", "", "- - - - -"},
		{"one key far ahead counts all passed", "a z", "", "- stop"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := PickManual(v, testOpts, 1, nil, nil)
			require.NotNil(t, c)
			require.Equal(t, uint64(10), c.TargetFileSize())
			require.Len(t, c.Grandparents, 4)
			var got []string
			for _, key := range strings.Fields(tc.keys) {
				if c.ShouldStopBefore([]byte(key)) {
					got = append(got, "stop")
				} else {
					got = append(got, "-")
				}
				if key == tc.finish {
					c.FinishOutput()
				}
			}
			require.Equal(t, tc.want, strings.Join(got, " "))
		})
	}
}

func TestKeyNotExistsBeyondOutputLevel(t *testing.T) {
	v := parseVersion(t, `
L1 1:a-z
L2 2:a-z
L3 3:c-d 4:f-g
L5 5:m-m`)
	c := PickManual(v, testOpts, 1, nil, nil)
	require.Equal(t, "L1->L2 [000001] + [000002] score=0.01 manual", c.String())
	for key, want := range map[string]bool{
		"": true, "a": true, "c": false, "cc": false, "d": false, "e": true, "f": false,
		"g": false, "ga": true, "m": false, "ma": true, "z": true,
	} {
		require.Equal(t, want, c.KeyNotExistsBeyondOutputLevel([]byte(key)), "%q", key)
	}
	// At the bottom, nothing lies below.
	c = PickManual(v, testOpts, 5, nil, nil)
	require.True(t, c.Bottommost)
	require.True(t, c.KeyNotExistsBeyondOutputLevel([]byte("m")))
}

func TestEdit(t *testing.T) {
	v := parseVersion(t, `
L1 1:a-b 2:c-d
L2 3:b-c`)
	c := PickManual(v, testOpts, 1, nil, nil)
	out := &manifest.FileMetadata{FileNum: 9, Size: 5,
		Smallest: base.MakeInternalKey([]byte("a"), 2, base.KindSet),
		Largest:  base.MakeInternalKey([]byte("d"), 1, base.KindSet), SmallestSeqNum: 1, LargestSeqNum: 3}
	require.Equal(t, "deleted: L1 000001\ndeleted: L1 000002\ndeleted: L2 000003\n"+
		"added: L2 000009 size=5 [\"a\"#2,SET-\"d\"#1,SET] seqs=1-3\n", c.Edit([]*manifest.FileMetadata{out}).String())

	v = parseVersion(t, `L0 2:c-d 1:a-b`)
	c = Pick(v, testOpts)
	require.True(t, c.TrivialMove)
	require.Equal(t, "deleted: L0 000001\nadded: L1 000001 size=1 [\"a\"#1,SET-\"b\"#1,SET] seqs=1-1\n",
		c.Edit(c.Inputs[0]).String())
}

func TestEmptyUserKeys(t *testing.T) {
	// A nil user key is the empty key, not an unbounded range.
	f := func(num manifest.FileNum, lo, hi []byte) *manifest.FileMetadata {
		return &manifest.FileMetadata{FileNum: num, Size: 1,
			Smallest:       base.MakeInternalKey(lo, base.SeqNum(num), base.KindSet),
			Largest:        base.MakeInternalKey(hi, base.SeqNum(num), base.KindSet),
			SmallestSeqNum: base.SeqNum(num), LargestSeqNum: base.SeqNum(num)}
	}
	v := &manifest.Version{}
	v.Levels[0] = []*manifest.FileMetadata{f(2, nil, nil), f(1, nil, nil)}
	v.Levels[1] = []*manifest.FileMetadata{f(3, []byte("a"), []byte("b"))}
	require.NoError(t, v.CheckConsistency())
	c := Pick(v, testOpts)
	require.Equal(t, "L0->L1 [000002 000001] + [] score=1.00 bottommost", fmt.Sprint(describe(c)))
	require.Equal(t, []byte{}, c.Largest)
}

func BenchmarkPick(b *testing.B) {
	// L1 over its target, and 10x as many files in each level below.
	for _, l1Files := range []int{10, 100} {
		b.Run(fmt.Sprintf("l1files=%d", l1Files), func(b *testing.B) {
			v := &manifest.Version{}
			n := manifest.FileNum(1)
			for level, count := 1, l1Files; level <= 3; level, count = level+1, count*10 {
				for i := range count {
					seq := base.SeqNum(n)
					v.Levels[level] = append(v.Levels[level], &manifest.FileMetadata{
						FileNum: n, Size: 20 << 20,
						Smallest:       base.MakeInternalKey([]byte(fmt.Sprintf("%08d", i*100000/count)), seq, base.KindSet),
						Largest:        base.MakeInternalKey([]byte(fmt.Sprintf("%08d", (i+1)*100000/count-1)), seq, base.KindSet),
						SmallestSeqNum: seq, LargestSeqNum: seq,
					})
					n++
				}
			}
			require.NoError(b, v.CheckConsistency())
			opts := Options{MaxBytesForLevelBase: 10 << 20}
			require.NotNil(b, Pick(v, opts))
			b.ReportAllocs()
			for b.Loop() {
				Pick(v, opts)
			}
		})
	}
}
