package wal

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/shaledb/shale/internal/base"
	"github.com/shaledb/shale/internal/crc"
	"github.com/stretchr/testify/require"
)

// FuzzWALRecord checks the Reader on arbitrary bytes and on damaged logs
// the Writer wrote:
//
//   - data as a log, in every mode, both on its own and placed lead bytes
//     before the first block boundary (straddle): no panic, no endless
//     loop, only corruption errors; every mode returns the same records up
//     to the first damage; SkipAnyCorrupted returns at least those; the
//     valid prefix (Offset) is itself a clean log of exactly those records;
//     and a claim that an intact chunk follows the damage is true.
//   - records derived from data, written, then cut at cut or with bit flip
//     flipped: the records returned are exactly those written before the
//     damage (prefix-consistent), classified as the package doc says.
//
// Inputs stay small (a few hundred bytes): the fuzzer minimizes every new
// interesting input with a number of executions that grows with the square
// of its length, so a seed of a block or more stalls it for a minute at a
// time. straddle and recordsFrom make logs of several blocks out of short
// inputs instead.
func FuzzWALRecord(f *testing.F) {
	small, err := os.ReadFile(filepath.Join("testdata", "small.log"))
	require.NoError(f, err)
	f.Add(small[:133], uint32(0), uint32(0), uint8(0))          // empty, short and 100-byte records
	f.Add(small[:140], uint32(130), uint32(8*120+3), uint8(60)) // the 1000-byte record cut short
	f.Add([]byte{}, uint32(0), uint32(0), uint8(0))
	f.Add(make([]byte, 40), uint32(17), uint32(5), uint8(3))
	f.Add(bytes.Join([][]byte{rawChunk(firstType, "ab"), rawChunk(middleType, "cd"), rawChunk(lastType, "e"),
		rawChunk(fullType, "")}, nil), uint32(9), uint32(77), uint8(14))
	f.Add(bytes.Join([][]byte{rawChunk(lastType, "x"), rawChunk(fullType, "y"), rawChunk(firstType, "z")}, nil),
		uint32(3), uint32(1), uint8(8))
	f.Add(bytes.Join([][]byte{rawChunk(fullType, "a"), rawChunk(7, "zz"), make([]byte, 12)}, nil), uint32(30), uint32(64), uint8(9))
	f.Add([]byte("\x10\x00\x01hello world, a few records\xff\xfe"), uint32(1000), uint32(123456), uint8(20))
	// The block-boundary cases of testdata/blocks.log, in a few bytes each:
	// a record starting a block, zero padding, an empty record in the last
	// 7 bytes of a block, and a zero-length first chunk there.
	f.Add(rawChunk(fullType, "x"), uint32(1), uint32(9), uint8(0))
	f.Add(append(make([]byte, 6), rawChunk(fullType, "abc")...), uint32(2), uint32(50), uint8(6))
	f.Add(append(rawChunk(fullType, ""), rawChunk(fullType, "y")...), uint32(3), uint32(60), uint8(7))
	f.Add(append(rawChunk(firstType, ""), rawChunk(lastType, strings.Repeat("z", 100))...), uint32(4), uint32(70), uint8(7))
	f.Add(append(rawChunk(firstType, "0123456789abc"), rawChunk(lastType, "de")...), uint32(5), uint32(80), uint8(20))
	f.Fuzz(func(t *testing.T, data []byte, cut, flip uint32, lead uint8) {
		checkArbitraryLog(t, data)
		checkArbitraryLog(t, straddle(data, lead))
		checkWrittenLog(t, data, cut, flip)
	})
}

// straddle returns a log of one intact record that fills the first block
// up to lead bytes before its end, followed by data: data then lands on a
// block's trailer and runs into the second block, as only inputs longer
// than a block could otherwise.
func straddle(data []byte, lead uint8) []byte {
	// Zeros: the filler cannot hold an embedded intact chunk.
	payload := make([]byte, BlockSize-int(lead)-headerSize)
	log := make([]byte, headerSize, BlockSize-int(lead)+len(data))
	binary.LittleEndian.PutUint32(log, typeCRC[fullType].Update(payload).Value())
	binary.LittleEndian.PutUint16(log[4:], uint16(len(payload)))
	log[6] = fullType
	log = append(log, payload...)
	return append(log, data...)
}

var followsRE = regexp.MustCompile(`an intact chunk follows at offset (\d+)$`)

func checkArbitraryLog(t *testing.T, data []byte) {
	tol := readAll(t, data, TolerateCorruptedTailRecords)
	abs := readAll(t, data, AbsoluteConsistency)
	pit := readAll(t, data, PointInTime)
	skip := readAll(t, data, SkipAnyCorrupted)

	for _, res := range []readResult{tol, abs, pit, skip} {
		for _, err := range []error{res.err, res.stop} {
			if err != nil {
				require.True(t, base.IsCorruption(err), "not marked corruption: %v", err)
			}
		}
	}
	requireRecords(t, pit.records, tol.records)
	requireRecords(t, pit.records, abs.records)
	require.Equal(t, pit.offset, tol.offset)
	require.Equal(t, pit.offset, abs.offset)
	require.NoError(t, pit.err)
	require.NoError(t, skip.err)
	require.NoError(t, abs.stop)

	damaged := pit.stop != nil
	require.Equal(t, damaged, abs.err != nil, "AbsoluteConsistency fails exactly when PointInTime stops early")
	require.Equal(t, damaged, skip.droppedRecs > 0, "SkipAnyCorrupted drops exactly when there is damage")
	if !damaged {
		require.NoError(t, tol.err)
		require.NoError(t, tol.stop)
		requireRecords(t, pit.records, skip.records)
		// Only padding may follow the last record of an undamaged log.
		if rest := int64(len(data)) - pit.offset; rest > 0 {
			left := BlockSize - pit.offset%BlockSize
			require.True(t, left < headerSize && rest <= left, "%d bytes after a clean end at %d", rest, pit.offset)
		}
	} else {
		require.True(t, (tol.err == nil) != (tol.stop == nil), "damage is either a torn tail or an error: %v / %v", tol.err, tol.stop)
		if tol.err != nil {
			m := followsRE.FindStringSubmatch(tol.err.Error())
			require.NotNil(t, m, "%v", tol.err)
			p, err := strconv.Atoi(m[1])
			require.NoError(t, err)
			require.GreaterOrEqual(t, int64(p), pit.offset)
			require.True(t, bruteIntact(data, p), "no intact chunk at %d: %v", p, tol.err)
		} else {
			require.Contains(t, tol.stop.Error(), "torn tail")
		}
	}
	require.GreaterOrEqual(t, len(skip.records), len(pit.records))
	requireRecords(t, pit.records, skip.records[:len(pit.records)])

	// The valid prefix is a clean log of the same records.
	prefix := readAll(t, data[:pit.offset], AbsoluteConsistency)
	require.NoError(t, prefix.err)
	requireRecords(t, pit.records, prefix.records)
}

// bruteIntact reports whether an intact chunk starts at p of data, decoded
// here without the Reader's code.
func bruteIntact(data []byte, p int) bool {
	blockEnd := (p/BlockSize + 1) * BlockSize
	if p+headerSize > min(len(data), blockEnd) {
		return false
	}
	typ := data[p+6]
	n := int(binary.LittleEndian.Uint16(data[p+4:]))
	end := p + headerSize + n
	if typ < fullType || typ > lastType || end > min(len(data), blockEnd) {
		return false
	}
	sum := crc.New([]byte{typ}).Update(data[p+headerSize : end]).Value()
	return sum == binary.LittleEndian.Uint32(data[p:])
}

// recordsFrom derives up to 16 records (64 KiB) from data: each takes a 2-byte length
// (kept small when its low bit is clear) and is filled by cycling through
// data, so short inputs still make records that span blocks.
func recordsFrom(data []byte) [][]byte {
	var records [][]byte
	total := 0
	for i := 0; i+2 <= len(data) && len(records) < 16; i += 2 {
		n := int(binary.LittleEndian.Uint16(data[i:]))
		if n&1 == 0 {
			n %= 300
		}
		n = min(n, 64<<10-total)
		// rec[j] = data[(i+2+j)%len(data)], a copy at a time.
		rec := make([]byte, n)
		k := copy(rec, data[(i+2)%len(data):])
		for k < n {
			k += copy(rec[k:], data)
		}
		records = append(records, rec)
		total += n
	}
	return records
}

// embeddedAfter reports whether data holds an intact chunk at an offset
// after from that is not one of the chunks the Writer wrote (starts).
func embeddedAfter(data []byte, from int64, starts map[int64]bool) bool {
	for p := from + 1; p+headerSize <= int64(len(data)); p++ {
		if !starts[p] && bruteIntact(data, int(p)) {
			return true
		}
	}
	return false
}

func checkWrittenLog(t *testing.T, data []byte, cut, flip uint32) {
	records := recordsFrom(data)
	if len(records) == 0 {
		return
	}
	l := writeLog(t, records)
	chunks := chunksOf(l)
	starts := map[int64]bool{}
	for _, c := range chunks {
		starts[c.off] = true
	}
	prefixEnd := func(k int) int64 {
		if k == 0 {
			return 0
		}
		return l.ends[k-1]
	}

	// Truncation: always a torn tail, unless the cut lands inside a payload
	// that embeds an intact chunk.
	c := int64(cut) % int64(len(l.data)+1)
	k := 0
	for k < len(records) && l.ends[k] <= c {
		k++
	}
	clean := k == len(records) || c <= l.starts[k]
	truncated := l.data[:c]
	for _, mode := range allModes {
		res := readAll(t, truncated, mode)
		requireRecords(t, records[:k], res.records)
		require.Equal(t, prefixEnd(k), res.offset)
		switch {
		case clean:
			require.NoError(t, res.err)
			require.NoError(t, res.stop)
		case mode == AbsoluteConsistency:
			require.True(t, base.IsCorruption(res.err))
		case mode == TolerateCorruptedTailRecords && res.err != nil:
			require.True(t, embeddedAfter(truncated, l.starts[k], starts), "a truncation reported as mid-log corruption: %v", res.err)
		default:
			require.NoError(t, res.err)
			require.True(t, base.IsCorruption(res.stop))
		}
	}

	// One bit flip.
	bit := int64(flip) % (8 * int64(len(l.data)))
	flipped := bytes.Clone(l.data)
	flipped[bit/8] ^= 1 << (bit % 8)
	ci := -1
	for i, ch := range chunks {
		if bit/8 >= ch.off && bit/8 < ch.end {
			ci = i
		}
	}
	if ci < 0 { // padding: never read
		for _, mode := range allModes {
			res := readAll(t, flipped, mode)
			requireRecords(t, records, res.records)
			require.NoError(t, res.err)
			require.NoError(t, res.stop)
		}
		return
	}
	ch := chunks[ci]
	j := ch.record
	// Computed only where it matters: the search is slow.
	embedded := func() bool { return embeddedAfter(flipped, ch.off, starts) }
	for _, mode := range []RecoveryMode{TolerateCorruptedTailRecords, AbsoluteConsistency, PointInTime} {
		res := readAll(t, flipped, mode)
		requireRecords(t, records[:j], res.records)
		require.Equal(t, prefixEnd(j), res.offset)
		switch {
		case mode == AbsoluteConsistency:
			require.True(t, base.IsCorruption(res.err))
		case mode == PointInTime:
			require.True(t, base.IsCorruption(res.stop))
		case ci < len(chunks)-1:
			require.ErrorContains(t, res.err, "corruption in the middle of the log")
		case res.err == nil:
			require.ErrorContains(t, res.stop, "torn tail")
		default:
			require.True(t, embedded(), "damage in the last chunk reported as mid-log corruption: %v", res.err)
		}
	}
	res := readAll(t, flipped, SkipAnyCorrupted)
	require.NoError(t, res.err)
	require.GreaterOrEqual(t, len(res.records), j)
	requireRecords(t, records[:j], res.records[:j])
	if !isSubsequence(res.records, records) {
		require.True(t, embedded(), "SkipAnyCorrupted returned a record that was not written")
	}
}
