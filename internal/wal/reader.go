package wal

import (
	"encoding/binary"
	"fmt"
	"io"

	"github.com/cockroachdb/errors"
	"github.com/shaledb/shale/internal/base"
)

// Reader reads the records of a log, applying a RecoveryMode at the first
// damage (see the package doc for the rules). It holds one block and a buffer
// as large as the largest record that spans blocks.
//
// A Reader is not safe for concurrent use.
type Reader struct {
	r      io.Reader
	mode   RecoveryMode
	prefix string // "wal" or "wal <file name>", for messages

	block     []byte // one block; block[:n] holds the bytes read
	n         int
	pos       int   // where the next chunk starts in block
	blockOff  int64 // file offset of block[0]
	lastBlock bool  // the underlying reader is exhausted

	rec      []byte // payloads of the record in progress
	recStart int64  // offset of that record's first chunk, or -1

	offset int64 // just past the last record returned
	err    error // what Next returns from now on: io.EOF, corruption or a read error
	stop   error // with err == io.EOF: why the log ended early, or nil
	// incomplete says, with stop, that the damage is an incomplete final
	// record (see TailIncomplete).
	incomplete bool

	// SkipAnyCorrupted bookkeeping. An incident starts at damage and ends
	// when a record starts; each incident counts as one dropped record.
	dropping     bool
	lastDamage   damage
	droppedRecs  int
	droppedBytes int64
	// incidentIncomplete: every damage of the current incident looks like
	// an incomplete final record (a torn chunk at EOF, or zeros to the end
	// of the block).
	incidentIncomplete bool
}

// NewReader returns a Reader of the log held by r, which must be positioned
// at the log's first byte. If r has a method Name() string (as *os.File
// does), errors name the file.
func NewReader(r io.Reader, mode RecoveryMode) *Reader {
	rd := &Reader{
		r:        r,
		mode:     mode,
		prefix:   "wal",
		block:    make([]byte, BlockSize),
		recStart: -1,
	}
	if f, ok := r.(interface{ Name() string }); ok {
		rd.prefix = "wal " + f.Name()
	}
	if mode > SkipAnyCorrupted {
		rd.err = base.InvalidArgumentf("wal: unknown recovery mode %d", uint8(mode))
	}
	return rd
}

// Next returns the next record. The slice is owned by the Reader and valid
// until the next call to Next. At the end of the log, including a torn tail
// that the mode tolerates, Next returns io.EOF (see Stopped). Damage the mode
// does not tolerate gives an error marked base.ErrCorruption; a failure of
// the underlying reader is returned wrapped, unmarked. Once Next has returned
// an error it returns the same error on every later call.
func (r *Reader) Next() ([]byte, error) {
	if r.err != nil {
		return nil, r.err
	}
	for {
		c, d, err := r.readChunk()
		if err != nil {
			r.err = err
			return nil, err
		}
		if d.kind != noDamage {
			if r.onDamage(d) {
				return nil, r.err
			}
			continue
		}
		if c.end == 0 { // no more chunks
			if r.recStart >= 0 {
				d := damage{kind: unterminated, off: r.blockOff + int64(r.n), recStart: r.recStart}
				if r.onDamage(d) {
					return nil, r.err
				}
			}
			r.err = io.EOF
			if r.mode == SkipAnyCorrupted && r.dropping {
				r.stop = base.CorruptionErrorf("%s: log ends in skipped damage: %s", r.prefix, &r.lastDamage)
				r.incomplete = r.incidentIncomplete
			}
			return nil, r.err
		}
		switch c.typ {
		case fullType, firstType:
			if r.recStart >= 0 {
				d := damage{kind: interrupted, off: c.off, typ: c.typ, recStart: r.recStart}
				if r.onDamage(d) {
					return nil, r.err
				}
			}
			r.dropping = false
			if c.typ == fullType {
				r.offset = c.end
				return c.payload, nil
			}
			r.rec = append(r.rec[:0], c.payload...)
			r.recStart = c.off
		case middleType, lastType:
			if r.recStart < 0 {
				d := damage{kind: orphan, off: c.off, typ: c.typ, length: len(c.payload), recStart: -1}
				if r.onDamage(d) {
					return nil, r.err
				}
				continue
			}
			r.rec = append(r.rec, c.payload...)
			if c.typ == lastType {
				r.recStart = -1
				r.offset = c.end
				return r.rec, nil
			}
		}
	}
}

// Offset returns the offset just past the last record Next returned: the end
// of the log's valid prefix, where a recovering engine truncates the log (or
// stops replaying it) after a torn tail.
func (r *Reader) Offset() int64 { return r.offset }

// Stopped reports, once Next has returned io.EOF, whether the log ended with
// damage that was not returned as records, and why (an error marked
// base.ErrCorruption, or nil for a clean end). offset is Offset(). In
// TolerateCorruptedTailRecords the reason is a torn tail; in PointInTime any
// damage; in SkipAnyCorrupted damage that was skipped with no record after
// it. Before io.EOF, and after an error, reason is nil.
func (r *Reader) Stopped() (offset int64, reason error) {
	if r.err != io.EOF {
		return r.offset, nil
	}
	return r.offset, r.stop
}

// TailIncomplete reports, once Next has returned io.EOF with a stop reason
// (see Stopped), whether the damage the log stopped at is an incomplete
// final record: the only trace a crash during an append can leave. That is a
// chunk header or payload cut short by EOF, a record whose later chunks are
// missing at EOF, or zeros from the damage to EOF (a file size made durable
// before its data). Any other damage is not, even at the very end of the
// log: a checksum mismatch in a complete chunk, an unknown chunk type, a
// length that does not fit its block, an orphan chunk, or zeros followed by
// other bytes. TolerateCorruptedTailRecords tolerates those too when nothing
// intact follows them (see the package doc); RocksDB's
// kTolerateCorruptedTailRecords does not, and an engine that wants its rule
// checks TailIncomplete. In SkipAnyCorrupted it describes the skipped damage
// the log ends in. Without a stop reason it is false.
func (r *Reader) TailIncomplete() bool {
	return r.err == io.EOF && r.stop != nil && r.incomplete
}

// Dropped reports what SkipAnyCorrupted skipped so far: records is the
// number of separate damaged places (each lost at least one record; how many
// cannot be known when a header is unreadable), bytes the total length of the
// skipped file regions, each from the damage (or from the start of the record
// it hit) to where reading resumed. It is (0, 0) in the other modes.
func (r *Reader) Dropped() (records int, bytes int64) {
	return r.droppedRecs, r.droppedBytes
}

// chunk is an intact chunk. payload aliases r.block. end is 0 when there is
// no chunk.
type chunk struct {
	typ     byte
	payload []byte
	off     int64 // offset of the header
	end     int64 // offset just past the payload
}

type damageKind uint8

const (
	noDamage     damageKind = iota
	tornHeader              // fewer than headerSize bytes before EOF
	zeroChunk               // type 0
	badType                 // type above lastType
	badLength               // the payload does not fit the block
	tornPayload             // the payload runs past EOF
	badChecksum             // the checksum does not match
	orphan                  // a middle or last chunk with no record in progress
	interrupted             // a record in progress, then a full or first chunk
	unterminated            // a record in progress, then EOF
)

// damage describes where the log stops being a sequence of good records.
type damage struct {
	kind     damageKind
	typ      byte
	off      int64 // offset of the damaged chunk's header; for unterminated, EOF
	length   int   // the header's length field
	avail    int   // tornHeader: bytes before EOF; tornPayload: payload bytes before EOF; badLength: room in the block
	stored   uint32
	computed uint32
	recStart int64 // offset of the record in progress, or -1
}

func (d *damage) String() string {
	var s string
	switch d.kind {
	case tornHeader:
		s = fmt.Sprintf("incomplete chunk header at offset %d: %d of %d bytes before EOF", d.off, d.avail, headerSize)
	case zeroChunk:
		s = fmt.Sprintf("chunk type 0 (zeroed or unwritten region) at offset %d", d.off)
	case badType:
		s = fmt.Sprintf("unknown chunk type %d at offset %d", d.typ, d.off)
	case badLength:
		s = fmt.Sprintf("bad length %d in %s chunk at offset %d: %d bytes fit before the block ends",
			d.length, typeName(d.typ), d.off, d.avail)
	case tornPayload:
		s = fmt.Sprintf("incomplete %s chunk at offset %d: length %d, %d payload bytes before EOF",
			typeName(d.typ), d.off, d.length, d.avail)
	case badChecksum:
		s = fmt.Sprintf("checksum mismatch in %s chunk at offset %d (length %d): stored 0x%08x, computed 0x%08x (masked CRC-32C)",
			typeName(d.typ), d.off, d.length, d.stored, d.computed)
	case orphan:
		s = fmt.Sprintf("%s chunk at offset %d (length %d) with no record in progress", typeName(d.typ), d.off, d.length)
	case interrupted:
		return fmt.Sprintf("record at offset %d has no last chunk: a %s chunk at offset %d starts another record",
			d.recStart, typeName(d.typ), d.off)
	case unterminated:
		return fmt.Sprintf("record at offset %d has no last chunk before EOF at offset %d", d.recStart, d.off)
	default:
		return fmt.Sprintf("damage kind %d at offset %d", d.kind, d.off)
	}
	if d.recStart >= 0 {
		s += fmt.Sprintf(", in the record at offset %d", d.recStart)
	}
	return s
}

// readChunk returns the next intact chunk, or the damage found instead, or
// neither (c.end == 0) when the log's bytes are used up. A read error ends
// the log.
func (r *Reader) readChunk() (c chunk, d damage, err error) {
	for {
		if r.pos >= r.n || BlockSize-r.pos < headerSize {
			// The rest of the block, if any, is padding.
			if r.lastBlock {
				r.pos = r.n
				return chunk{}, damage{}, nil
			}
			if err := r.loadBlock(); err != nil {
				return chunk{}, damage{}, err
			}
			continue
		}
		b, p := r.block[:r.n], r.pos
		d.off = r.blockOff + int64(p)
		d.recStart = r.recStart
		if len(b)-p < headerSize {
			d.kind, d.avail = tornHeader, len(b)-p
			return chunk{}, d, nil
		}
		d.stored = binary.LittleEndian.Uint32(b[p:])
		d.length = int(binary.LittleEndian.Uint16(b[p+4:]))
		d.typ = b[p+6]
		end := p + headerSize + d.length
		switch {
		case d.typ == zeroType:
			d.kind = zeroChunk
		case d.typ > lastType:
			d.kind = badType
		case end > BlockSize:
			d.kind, d.avail = badLength, BlockSize-p-headerSize
		case end > len(b):
			d.kind, d.avail = tornPayload, len(b)-p-headerSize
		default:
			d.computed = typeCRC[d.typ].Update(b[p+headerSize : end]).Value()
			if d.computed != d.stored {
				d.kind = badChecksum
				break
			}
			r.pos = end
			return chunk{typ: d.typ, payload: b[p+headerSize : end], off: d.off, end: r.blockOff + int64(end)}, damage{}, nil
		}
		return chunk{}, d, nil
	}
}

// loadBlock reads the next block into r.block.
func (r *Reader) loadBlock() error {
	r.blockOff += int64(r.n)
	r.pos = 0
	n, err := io.ReadFull(r.r, r.block)
	r.n = n
	if err != nil {
		r.lastBlock = true
		if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
			r.n = 0
			return errors.Wrapf(err, "%s: reading block at offset %d", r.prefix, r.blockOff)
		}
	}
	return nil
}

// onDamage applies the recovery mode to d and reports whether the reader is
// done (r.err is set). Before the call, r.pos is at the damaged chunk, or just
// past it for orphan and interrupted.
func (r *Reader) onDamage(d damage) (done bool) {
	switch r.mode {
	case AbsoluteConsistency:
		r.err = base.CorruptionErrorf("%s: corruption: %s", r.prefix, &d)
	case PointInTime:
		incomplete, err := r.incompleteAt(d)
		if err != nil {
			r.err = err
			break
		}
		r.err = io.EOF
		r.stop = base.CorruptionErrorf("%s: stopped at damage: %s", r.prefix, &d)
		r.incomplete = incomplete
	case TolerateCorruptedTailRecords:
		next, zeros, err := r.findIntact(d)
		switch {
		case err != nil:
			r.err = err
		case next >= 0:
			r.err = base.CorruptionErrorf("%s: corruption in the middle of the log: %s; an intact chunk follows at offset %d",
				r.prefix, &d, next)
		default:
			r.err = io.EOF
			r.stop = base.CorruptionErrorf("%s: torn tail: %s", r.prefix, &d)
			r.incomplete = incompleteKind(d.kind) || (d.kind == zeroChunk && zeros)
		}
	default: // SkipAnyCorrupted; NewReader rejected other values
		if !r.dropping {
			r.incidentIncomplete = true
		}
		r.incidentIncomplete = r.incidentIncomplete &&
			(incompleteKind(d.kind) || (d.kind == zeroChunk && allZero(r.block[r.pos:r.n])))
		r.skip(d)
		return false
	}
	return true
}

// incompleteKind reports whether damage of kind k is, by itself, an
// incomplete final record: each of these kinds is found only at EOF.
func incompleteKind(k damageKind) bool {
	return k == tornHeader || k == tornPayload || k == unterminated
}

// incompleteAt reports whether damage d is an incomplete final record; for a
// zeroed chunk that means reading on to EOF to see that only zeros follow.
// The reader is done after it (PointInTime).
func (r *Reader) incompleteAt(d damage) (bool, error) {
	if d.kind != zeroChunk {
		return incompleteKind(d.kind), nil
	}
	from := r.pos
	for {
		if !allZero(r.block[from:r.n]) {
			return false, nil
		}
		if r.lastBlock {
			return true, nil
		}
		if err := r.loadBlock(); err != nil {
			return false, err
		}
		from = 0
	}
}

// allZero reports whether b holds only zero bytes.
func allZero(b []byte) bool {
	for len(b) >= 8 {
		if binary.LittleEndian.Uint64(b) != 0 {
			return false
		}
		b = b[8:]
	}
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// findIntact returns the offset of the first intact chunk after damage d, or
// -1 if none exists before EOF; then zeros reports whether every byte from
// the damaged chunk to EOF is zero. It reads the rest of the log.
func (r *Reader) findIntact(d damage) (next int64, zeros bool, err error) {
	var from int
	switch d.kind {
	case interrupted:
		return d.off, false, nil // the interrupting chunk is intact
	case unterminated:
		return -1, true, nil // at EOF
	case orphan:
		from = r.pos // the orphan is intact; search after it
	default:
		from = r.pos + 1 // the damaged chunk's own length cannot be trusted
	}
	zeros = allZero(r.block[r.pos:r.n])
	for {
		if p := findIntactIn(r.block[:r.n], from); p >= 0 {
			return r.blockOff + int64(p), false, nil
		}
		if r.lastBlock {
			return -1, zeros, nil
		}
		if err := r.loadBlock(); err != nil {
			return -1, false, err
		}
		zeros = zeros && allZero(r.block[:r.n])
		from = 0
	}
}

// findIntactIn returns the first position at or after from where an intact
// chunk starts in block b, or -1.
func findIntactIn(b []byte, from int) int {
	for p := from; p+headerSize <= len(b); p++ {
		if intactAt(b, p) {
			return p
		}
	}
	return -1
}

// intactAt reports whether an intact chunk starts at position p of block b
// (b is a whole block, or the short last one). p+headerSize <= len(b).
func intactAt(b []byte, p int) bool {
	typ := b[p+6]
	if typ == zeroType || typ > lastType {
		return false
	}
	end := p + headerSize + int(binary.LittleEndian.Uint16(b[p+4:]))
	if end > len(b) {
		return false
	}
	return typeCRC[typ].Update(b[p+headerSize:end]).Value() == binary.LittleEndian.Uint32(b[p:])
}

// skip drops the damage d and positions the reader where reading resumes
// (SkipAnyCorrupted).
func (r *Reader) skip(d damage) {
	start := d.off
	if d.recStart >= 0 {
		start = d.recStart
	}
	var resume int64
	switch d.kind {
	case interrupted:
		// The caller goes on with the interrupting chunk; only the record
		// in progress is lost.
		resume = d.off
	case orphan:
		resume = r.blockOff + int64(r.pos)
	case badChecksum:
		// Trust the length only if it leads to a chunk boundary.
		if end := r.pos + headerSize + d.length; r.boundaryAt(end) {
			r.pos = end
		} else {
			r.pos = r.n
		}
		resume = r.blockOff + int64(r.pos)
	default:
		// The header cannot be trusted: drop the rest of the block.
		r.pos = r.n
		resume = r.blockOff + int64(r.pos)
	}
	if !r.dropping {
		r.dropping = true
		r.droppedRecs++
	}
	r.droppedBytes += resume - start
	r.recStart = -1
	r.lastDamage = d
}

// boundaryAt reports whether position end of the current block is where a
// chunk could follow the one before it: the end of the bytes read, the
// padding, or an intact chunk.
func (r *Reader) boundaryAt(end int) bool {
	switch {
	case end == r.n, BlockSize-end < headerSize:
		return true
	case end+headerSize > r.n:
		return false
	default:
		return intactAt(r.block[:r.n], end)
	}
}

// NewReaderAt returns a Reader of the log in ra that starts at offset start,
// a record boundary an earlier Reader of the same log reported (Offset), and
// reads up to end. It is how a reader follows a log another process is still
// appending to: read to the current end, remember Offset, and later read on
// from there with a new Reader (a secondary instance's WAL and MANIFEST
// tailing). Offsets it reports are the log's, not relative to start.
func NewReaderAt(ra io.ReaderAt, start, end int64, mode RecoveryMode) *Reader {
	blockStart := start - start%BlockSize
	rd := NewReader(io.NewSectionReader(ra, blockStart, max(end-blockStart, 0)), mode)
	if f, ok := ra.(interface{ Name() string }); ok {
		rd.prefix = "wal " + f.Name()
	}
	rd.blockOff = blockStart
	rd.offset = start
	if skip := int(start - blockStart); skip > 0 {
		// Load the block start lies in and stand at start within it: the
		// chunks before it are records already returned.
		if err := rd.loadBlock(); err != nil {
			rd.err = err
			return rd
		}
		rd.pos = min(skip, rd.n)
	}
	return rd
}
