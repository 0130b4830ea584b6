package block

import (
	"encoding/binary"

	"github.com/shaledb/shale/internal/base"
)

// Builder encodes one block. Keys must be added in increasing order of the
// comparer the block will be read with; the Builder does not check (the table
// writer does, once, for the whole table).
//
// A Builder is not safe for concurrent use.
type Builder struct {
	restartInterval int
	buf             []byte
	restarts        []uint32
	// counter is the number of entries since the last restart point.
	counter  int
	nEntries int
	lastKey  []byte
	finished bool
}

// Init prepares a zero Builder (or resets a used one) to start a restart
// interval every restartInterval entries (values below 1 are treated as 1).
// Builders are embedded by value, so there is no constructor.
func (b *Builder) Init(restartInterval int) {
	b.restartInterval = max(restartInterval, 1)
	b.Reset()
}

// Reset empties the Builder, keeping its memory. Slices returned by Finish
// become invalid.
func (b *Builder) Reset() {
	b.buf = b.buf[:0]
	b.restarts = append(b.restarts[:0], 0)
	b.counter = 0
	b.nEntries = 0
	b.lastKey = b.lastKey[:0]
	b.finished = false
}

// Add appends an entry. key and value are copied. Adding after Finish without
// a Reset is a bug.
func (b *Builder) Add(key, value []byte) {
	if b.finished {
		panic(base.AssertionFailedf("block: Add after Finish"))
	}
	shared := 0
	if b.counter < b.restartInterval {
		n := min(len(b.lastKey), len(key))
		for shared < n && b.lastKey[shared] == key[shared] {
			shared++
		}
	} else {
		b.restarts = append(b.restarts, uint32(len(b.buf)))
		b.counter = 0
	}
	b.buf = binary.AppendUvarint(b.buf, uint64(shared))
	b.buf = binary.AppendUvarint(b.buf, uint64(len(key)-shared))
	b.buf = binary.AppendUvarint(b.buf, uint64(len(value)))
	b.buf = append(b.buf, key[shared:]...)
	b.buf = append(b.buf, value...)
	b.lastKey = append(b.lastKey[:shared], key[shared:]...)
	b.counter++
	b.nEntries++
}

// Empty reports whether no entry was added since the last Reset.
func (b *Builder) Empty() bool { return b.nEntries == 0 }

// NumEntries returns the number of entries added since the last Reset.
func (b *Builder) NumEntries() int { return b.nEntries }

// LastKey returns the last key added. It is owned by the Builder and valid
// until the next Add or Reset.
func (b *Builder) LastKey() []byte { return b.lastKey }

// EstimatedSize returns the size the block would have if finished now.
func (b *Builder) EstimatedSize() int {
	return len(b.buf) + 4*len(b.restarts) + 4
}

// Finish appends the restart array and returns the encoded block. The slice
// is owned by the Builder and valid until the next Reset. Calling Finish again
// returns the same block.
func (b *Builder) Finish() []byte {
	if b.finished {
		return b.buf
	}
	for _, r := range b.restarts {
		b.buf = binary.LittleEndian.AppendUint32(b.buf, r)
	}
	b.buf = binary.LittleEndian.AppendUint32(b.buf, uint32(len(b.restarts)))
	b.finished = true
	return b.buf
}
