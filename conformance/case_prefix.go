package conformance

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/shaledb/shale/driver"
	"github.com/shaledb/shale/statistics"
)

// The case of prefix iteration over prefix filters (issue 27, item 1):
// IteratorPrefix checks IterOptions.Prefix on a database opened with the
// driver's defaults; this case opens one whose prefix filters are
// consulted (capability PrefixFilters), so that a filter that rules out a
// table wrongly, or is asked for a prefix it does not cover, shows as a
// missing key.

// prefixFilterLen is the extractor length of the case's databases: keys
// are shorter than it, as long as it and longer, and so are the prefixes
// iterated.
const prefixFilterLen = 3

func testIteratorPrefixFilters(t testing.TB, s *suite) {
	for _, capped := range []bool{false, true} {
		c := prefixFilters(prefixFilterLen, capped)
		params := s.need(t, c)
		// Statistics are optional here: with them the case also checks
		// that the filters were asked and ruled tables out.
		var statsParams []param
		if ps, unavailable := s.provide(statsLevel(statistics.DefaultLevel)); unavailable == "" {
			statsParams = ps
		}
		// Without automatic compactions each Flush leaves a table of its
		// own, holding some prefixes and not others.
		db := s.open(t, append(append(params, statsParams...), opt("disable_auto_compactions", "true"))...)
		checkPrefixFilters(t, s, db, c)
	}
}

// checkPrefixFilters writes keys under twelve 3-byte prefixes in four
// rounds, the first three flushed (each round's table holds a third of the
// prefixes, deletions and overwrites of the round before, a whole prefix
// deleted), the fourth left in memory, then compares prefix scans, seeks
// and random moves with the model: before and after Compact, and after a
// reopen with an extractor of another length.
func checkPrefixFilters(t testing.TB, s *suite, db *dbh, c Capability) {
	t.Helper()
	m := newModel()
	prefix := func(i int) string { return fmt.Sprintf("p%02d", i) }
	suffixes := []string{"", "\x00", "a", "b", "\xff"}
	// Keys shorter than the extractor, and keys under an all-0xff prefix.
	odd := []string{"p", "p0", "o", "\xff", "\xff\xff", "\xff\xff\xff", "\xff\xff\xff\x00", "\xff\xff\xff\xff"}
	flushed := true
	for round := range 4 {
		val := func(k string) []byte { return fmt.Appendf(nil, "r%d:%s", round, k) }
		for i := round; i < 12; i += 4 {
			for _, sfx := range suffixes {
				k := prefix(i) + sfx
				mustPut(t, db, []byte(k), val(k))
				m.put([]byte(k), val(k))
			}
		}
		if round > 0 {
			// A deletion and an overwrite in this round's table of keys in
			// the previous round's.
			p := prefix(round - 1)
			mustDelete(t, db, []byte(p+"a"))
			m.del([]byte(p + "a"))
			mustPut(t, db, []byte(p+"b"), val(p+"b"))
			m.put([]byte(p+"b"), val(p+"b"))
		}
		if round == 2 {
			// Prefix p10 (written in round 2) deleted whole, in the same
			// table: its filter holds the prefix, its keys are gone.
			for _, sfx := range suffixes {
				mustDelete(t, db, []byte(prefix(10)+sfx))
				m.del([]byte(prefix(10) + sfx))
			}
		}
		if round == 3 {
			for _, k := range odd {
				mustPut(t, db, []byte(k), val(k))
				m.put([]byte(k), val(k))
			}
			break // left in the memtable
		}
		if err := db.Flush(bg); errors.Is(err, driver.ErrNotSupported) {
			flushed = false
		} else if err != nil {
			t.Fatalf("Flush: %v", err)
		}
	}

	st := db.Statistics()
	useful0 := uint64(0)
	if st != nil {
		useful0 = st.TickerCount(statistics.BloomFilterPrefixUseful)
	}
	checkPrefixQueries(t, db, m, fmt.Sprintf("%s, before Compact", c))
	if st != nil && flushed && st.Level() >= statistics.DefaultLevel {
		// Every flushed table's key range covers prefixes it does not hold
		// (p00 to p08 in the first table, p01 to p09 in the second): a
		// scan of such a prefix consults the table's filter, which rules
		// it out.
		useful := st.TickerCount(statistics.BloomFilterPrefixUseful) - useful0
		if useful == 0 {
			t.Errorf("%s: after prefix scans over three flushed tables, each missing prefixes inside its key range, "+
				"ticker %s grew by 0; want the filters to have ruled some tables out",
				c, statistics.BloomFilterPrefixUseful)
		}
	}
	if err := db.Compact(bg, nil, nil); err != nil && !errors.Is(err, driver.ErrNotSupported) {
		t.Fatalf("Compact: %v", err)
	}
	checkPrefixQueries(t, db, m, fmt.Sprintf("%s, after Compact", c))

	if db.path == memoryPath {
		return
	}
	// Reopened with an extractor of another length, the tables written
	// with the first must still give every key: their filters hold other
	// prefixes.
	other := prefixFilters(prefixFilterLen-1, c.PrefixCapped)
	params, unavailable := s.provide(other)
	if unavailable != "" {
		t.Logf("reopen with %s not checked: %s", other, unavailable)
		return
	}
	db.close(t)
	db = s.openDSN(t, db.dsn, params)
	checkPrefixQueries(t, db, m, fmt.Sprintf("written with %s, reopened with %s", c, other))
}

// checkPrefixQueries compares every query of the case (prefixes present,
// absent, shorter and longer than the extractor, empty, all-0xff, with
// bounds) with the model: scans both ways, SeekGE and SeekLT to keys inside
// and outside the prefix, random moves.
func checkPrefixQueries(t testing.TB, db *dbh, m *model, when string) {
	t.Helper()
	type query struct{ prefix, lower, upper []byte }
	var qs []query
	for _, p := range []string{"p00", "p01", "p02", "p03", "p04", "p05", "p06", "p07", "p08", "p09", "p10", "p11",
		"p12", "p99", "o", "p0", "p", "", "p05a", "p05\x00", "p05c", "p04\xff", "\xff", "\xff\xff", "\xff\xff\xff",
		"\xff\xff\xff\xff", "\xff\xff\xff\xff\xff"} {
		qs = append(qs, query{prefix: []byte(p)})
	}
	qs = append(qs,
		query{[]byte("p05"), []byte("p05a"), nil},
		query{[]byte("p05"), nil, []byte("p05b")},
		query{[]byte("p0"), []byte("p03"), []byte("p07")},
		query{[]byte("p04"), []byte("p02"), []byte("p09")},
		query{[]byte("p12"), []byte("p00"), []byte("p99")},
		query{[]byte("p06"), []byte("p07"), []byte("p08")},
		query{[]byte("\xff\xff\xff"), nil, []byte("\xff\xff\xff\x01")},
	)
	targets := [][]byte{{}, []byte("o"), []byte("p"), []byte("p0"), []byte("p04"), []byte("p05"), []byte("p05\x00"),
		[]byte("p05a"), []byte("p05c"), []byte("p05\xff\xff"), []byte("p06"), []byte("p10"), []byte("p12"),
		[]byte("\xff\xff"), []byte("\xff\xff\xff"), []byte("\xff\xff\xff\xff\xff")}
	rng := rand.New(rand.NewPCG(27, 1))
	for _, qq := range qs {
		what := fmt.Sprintf("%s: prefix %s, bounds [%s, %s)", when, q(qq.prefix), q(qq.lower), q(qq.upper))
		var want []kv
		for _, e := range m.scan(qq.lower, qq.upper) {
			if strings.HasPrefix(e.k, string(qq.prefix)) {
				want = append(want, e)
			}
		}
		opts := &driver.IterOptions{Prefix: slices.Clone(qq.prefix), LowerBound: slices.Clone(qq.lower),
			UpperBound: slices.Clone(qq.upper)}
		checkScans(t, db, opts, want, what)
		it, err := db.NewIterator(bg, opts)
		if err != nil {
			t.Fatalf("NewIterator with %s: %v", what, err)
		}
		ref := &refIter{kvs: want}
		for _, k := range targets {
			compareMove(t, it, ref, it.SeekGE(k), ref.seekGE(k), moveTrail{fmt.Sprintf("SeekGE(%s)", q(k))}, what)
			compareMove(t, it, ref, it.SeekLT(k), ref.seekLT(k), moveTrail{fmt.Sprintf("SeekLT(%s)", q(k))}, what)
		}
		randomWalk(t, rng, it, ref, targets, 60, what)
		if err := it.Close(); err != nil {
			t.Errorf("Iterator.Close with %s: %v", what, err)
		}
	}
}
