package compact

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/manifest"
	"github.com/shaledb/shale/vfs"
	"github.com/stretchr/testify/require"
)

// simEntry is one entry of a simulated table.
type simEntry struct {
	key string
	seq base.SeqNum
}

// lsmSim runs flushes and compactions against a real VersionSet, with up to
// several compactions picked and held open at once and finished in random
// order, and tracks the entries of every table.
type lsmSim struct {
	t       *testing.T
	rng     *rand.Rand
	vs      *manifest.VersionSet
	opts    Options
	seq     base.SeqNum
	entries map[manifest.FileNum][]simEntry
	running []*Compaction
	total   int // entries flushed
}

func newLSMSim(t *testing.T, seed uint64) *lsmSim {
	mem := vfs.NewMem()
	require.NoError(t, mem.MkdirAll("db", 0o755))
	vs, err := manifest.Create(mem, "db")
	require.NoError(t, err)
	return &lsmSim{
		t:   t,
		rng: rand.New(rand.NewPCG(seed, 1)),
		vs:  vs,
		opts: Options{
			L0CompactionTrigger:  2,
			LevelMultiplier:      3,
			MaxBytesForLevelBase: 1000,
			TargetFileSizeBase:   300,
			MaxCompactionBytes:   3000,
		},
		entries: map[manifest.FileNum][]simEntry{},
	}
}

// makeFile registers a table holding es (sorted by key, newest first).
func (s *lsmSim) makeFile(es []simEntry) *manifest.FileMetadata {
	slices.SortFunc(es, func(a, b simEntry) int {
		if c := cmp.Compare(a.key, b.key); c != 0 {
			return c
		}
		return cmp.Compare(b.seq, a.seq)
	})
	f := &manifest.FileMetadata{
		FileNum:        s.vs.NewFileNum(),
		Size:           uint64(100 * len(es)),
		Smallest:       base.MakeInternalKey([]byte(es[0].key), es[0].seq, base.KindSet),
		Largest:        base.MakeInternalKey([]byte(es[len(es)-1].key), es[len(es)-1].seq, base.KindSet),
		SmallestSeqNum: es[0].seq,
		LargestSeqNum:  es[0].seq,
	}
	for _, e := range es {
		f.SmallestSeqNum = min(f.SmallestSeqNum, e.seq)
		f.LargestSeqNum = max(f.LargestSeqNum, e.seq)
	}
	s.entries[f.FileNum] = es
	return f
}

func (s *lsmSim) key() string {
	return fmt.Sprintf("%c%c", 'a'+s.rng.IntN(26), 'a'+s.rng.IntN(26))
}

func (s *lsmSim) flush() {
	var es []simEntry
	seen := map[string]bool{}
	lo := s.key()
	for range 1 + s.rng.IntN(6) {
		// Keys clustered near lo, so L0 files overlap some but not all.
		k := lo[:1] + string(rune('a'+s.rng.IntN(26)))
		if seen[k] {
			continue
		}
		seen[k] = true
		s.seq++
		es = append(es, simEntry{k, s.seq})
	}
	s.total += len(es)
	e := &manifest.VersionEdit{}
	e.AddFile(0, s.makeFile(es))
	require.NoError(s.t, s.vs.LogAndApply(e))
}

func (s *lsmSim) pick() {
	v := s.vs.Current()
	defer v.Unref()
	var c *Compaction
	if s.rng.IntN(5) == 0 {
		lo, hi := s.key(), s.key()
		if hi < lo {
			lo, hi = hi, lo
		}
		c = PickManual(v, s.opts, s.rng.IntN(manifest.NumLevels), []byte(lo), []byte(hi))
	} else {
		c = Pick(v, s.opts)
	}
	if c != nil {
		s.start(c, v)
	}
}

// start marks c's inputs and adds it to the running compactions, with a
// reference on v, the version it was picked from.
func (s *lsmSim) start(c *Compaction, v *manifest.Version) {
	for _, files := range c.Inputs {
		for _, f := range files {
			require.False(s.t, f.CompactionInProgress, "picked a file being compacted: %s", c)
			f.CompactionInProgress = true
		}
	}
	// Picked compactions with the same output level write disjoint ranges.
	for _, r := range s.running {
		if r.OutputLevel == c.OutputLevel {
			disjoint := string(c.Largest) < string(r.Smallest) || string(r.Largest) < string(c.Smallest)
			require.True(s.t, disjoint, "%s [%s-%s] overlaps running %s [%s-%s]",
				c, c.Smallest, c.Largest, r, r.Smallest, r.Largest)
		}
	}
	v.Ref() // the compaction's reference, dropped by finish
	s.running = append(s.running, c)
}

// finish completes a running compaction: its inputs' entries, all kept, go
// to one or two output files split at a key boundary.
func (s *lsmSim) finish(i int) {
	c := s.running[i]
	s.running = slices.Delete(s.running, i, i+1)
	var outputs []*manifest.FileMetadata
	if c.TrivialMove {
		outputs = c.Inputs[0]
	} else {
		var es []simEntry
		for _, files := range c.Inputs {
			for _, f := range files {
				es = append(es, s.entries[f.FileNum]...)
			}
		}
		slices.SortFunc(es, func(a, b simEntry) int { return cmp.Compare(a.key, b.key) })
		cut := len(es)
		if len(es) > 1 && s.rng.IntN(2) == 0 {
			cut = 1 + s.rng.IntN(len(es)-1)
			for cut < len(es) && es[cut].key == es[cut-1].key {
				cut++ // never split a user key across files
			}
		}
		outputs = append(outputs, s.makeFile(slices.Clone(es[:cut])))
		if cut < len(es) {
			outputs = append(outputs, s.makeFile(slices.Clone(es[cut:])))
		}
	}
	require.NoError(s.t, s.vs.LogAndApply(c.Edit(outputs)), "applying %s", c)
	for _, files := range c.Inputs {
		for _, f := range files {
			f.CompactionInProgress = false
		}
	}
	c.version.Unref()
}

// check verifies the LSM invariant on the current version: reading down the
// tree (L0 newest first, then L1, L2, ...), every key's entries get older,
// and no entry was lost.
func (s *lsmSim) check() {
	v := s.vs.Current()
	defer v.Unref()
	require.NoError(s.t, v.CheckConsistency())
	last := map[string]base.SeqNum{}
	n := 0
	for level, files := range v.Levels {
		for _, f := range files {
			for _, e := range s.entries[f.FileNum] {
				if prev, ok := last[e.key]; ok {
					require.Less(s.t, e.seq, prev, "key %q: L%d file %s has seq %d below a newer-read %d\n%s",
						e.key, level, f.FileNum, e.seq, prev, v)
				}
				last[e.key] = e.seq
				n++
			}
		}
	}
	require.Equal(s.t, s.total, n, "entries lost or duplicated")
}

func TestPickerSimulation(t *testing.T) {
	seeds := uint64(6)
	if testing.Short() {
		seeds = 2
	}
	for seed := range seeds {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			s := newLSMSim(t, seed)
			picked := 0
			for range 600 {
				switch r := s.rng.IntN(10); {
				case r < 4:
					s.flush()
				case r < 7:
					before := len(s.running)
					s.pick()
					if len(s.running) > before {
						picked++
					}
				case len(s.running) > 0:
					s.finish(s.rng.IntN(len(s.running)))
				}
				s.check()
			}
			for len(s.running) > 0 {
				s.finish(0)
				s.check()
			}
			// With nothing running, Pick drains every level below score 1.
			for range 1000 {
				v := s.vs.Current()
				c := Pick(v, s.opts)
				if c == nil {
					v.Unref()
					break
				}
				s.start(c, v)
				v.Unref()
				s.finish(0)
				s.check()
			}
			v := s.vs.Current()
			for level, score := range Scores(v, s.opts) {
				require.Less(t, score, 1.0, "L%d", level)
			}
			v.Unref()
			require.Greater(t, picked, 50)
			require.NoError(t, s.vs.Close())
		})
	}
}
