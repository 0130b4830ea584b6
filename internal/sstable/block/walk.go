package block

// Walker reads the entries of one uncompressed block forward, once: what
// Iter's First and Next do, without the state that seeks and Prev need. It
// is for passes that turn a whole block into another form, such as the
// sstable reader's decoding of an index partition into its flat form at
// every cache miss of one, where the walk is most of the cost.
//
// Keys that share a prefix with their predecessor are rebuilt in a scratch
// buffer that the Walker keeps across Init; the others (every entry of an
// index block, written with restart interval 1) point into the block.
// Errors are Iter's: a malformed restart array or entry stops the walk with
// an error marked base.ErrCorruption naming the offset, and no input makes
// a Walker panic or read outside the block.
//
// The zero Walker is an empty one. A Walker is not safe for concurrent use.
type Walker struct {
	data []byte
	// end is the offset of the restart array: the entries end there. off
	// is the offset of the next entry.
	end, off   int
	key, value []byte
	// keyInBuf says key is buf, built from a shared prefix.
	keyInBuf bool
	buf      []byte
	err      error
}

// Init starts w, before the first entry, on data, whose restart array it
// checks as Iter.Init does. data must stay unchanged while w is used: Key
// and Value point into it.
func (w *Walker) Init(data []byte) error {
	*w = Walker{buf: w.buf[:0]}
	restarts, _, err := checkRestarts(data)
	if err != nil {
		w.err = err
		return err
	}
	w.data, w.end = data, restarts
	return nil
}

// Next moves to the next entry and reports whether there is one: false at
// the end of the block and at the first malformed entry (see Err).
func (w *Walker) Next() bool {
	off := w.off
	// The common case: three one-byte lengths (keys and values shorter
	// than 128 bytes), and an entry that fits the block.
	if off+3 <= w.end {
		b := w.data[off : off+3 : off+3]
		if b[0]|b[1]|b[2] < 0x80 {
			shared := int(b[0])
			keyEnd := off + 3 + int(b[1])
			next := keyEnd + int(b[2])
			if next <= w.end && shared <= len(w.key) {
				w.setKey(shared, w.data[off+3:keyEnd:keyEnd])
				w.value = w.data[keyEnd:next:next]
				w.off = next
				return true
			}
		}
	}
	return w.nextSlow()
}

// setKey makes the current key the previous key's first shared bytes
// followed by unshared.
func (w *Walker) setKey(shared int, unshared []byte) {
	if shared == 0 {
		w.key = unshared
		w.keyInBuf = false
		return
	}
	if !w.keyInBuf {
		w.buf = append(w.buf[:0], w.key[:shared]...)
	}
	w.buf = append(w.buf[:shared], unshared...)
	w.key = w.buf[:len(w.buf):len(w.buf)]
	w.keyInBuf = true
}

// nextSlow is Next for any entry, checking every length.
func (w *Walker) nextSlow() bool {
	off := w.off
	if off >= w.end || w.err != nil {
		w.key, w.value = nil, nil
		return false
	}
	shared, keyStart, keyEnd, next, err := decodeHeader(w.data, w.end, off, len(w.key))
	if err != nil {
		w.err = err
		w.key, w.value = nil, nil
		w.off = w.end
		return false
	}
	w.setKey(shared, w.data[keyStart:keyEnd:keyEnd])
	w.value = w.data[keyEnd:next:next]
	w.off = next
	return true
}

// Key returns the current entry's key: in the block, or in w's scratch
// memory until the next Next or Init.
func (w *Walker) Key() []byte { return w.key }

// KeyInBlock reports whether Key points into the block, and so stays valid
// after the next move: true for an entry that shares no prefix with its
// predecessor, as every entry of an index block does.
func (w *Walker) KeyInBlock() bool { return !w.keyInBuf }

// Value returns the current entry's value, which points into the block.
func (w *Walker) Value() []byte { return w.value }

// Err returns the corruption that stopped the walk, if any.
func (w *Walker) Err() error { return w.err }
