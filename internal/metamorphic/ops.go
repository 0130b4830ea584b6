package metamorphic

import (
	"bufio"
	"bytes"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/cockroachdb/errors"
)

// Op is one line of a history: an optional object ("b1", "s2", "t1", "i3";
// empty for the database), an operation name and its arguments. Its String
// is the line, and ParseOp reads it back.
//
//	put K V [sync|nowal]     del K [W]      delrange S E [W]      merge K V [W]
//	get K                    multiget K...  scan
//	batch bN                 bN.put K V     bN.del K     bN.delrange S E   bN.write [W]
//	                         bN.merge K V
//	snap sN                  sN.get K       sN.multiget K...   sN.scan      sN.close
//	begin tN [W]             tN.put K V     tN.del K     tN.delrange S E   tN.get K
//	                         tN.multiget K...   tN.scan  tN.commit   tN.rollback
//	iter iN L U              sN.iter iN L U     tN.iter iN L U
//	iN.first  iN.last  iN.next  iN.prev  iN.seekge K  iN.seeklt K  iN.close
//	flush    compact L U    syncwal    checkpoint    reopen
//	ingest K V [K V]...     (a table of puts, keys increasing, bulk-loaded)
//
// A bound written "-" is nil (open). A value is a token (see ValueBytes):
//
//	v12        the bytes "v12"
//	v12*300    "v12." repeated to 300 bytes
//	''         the empty value
type Op struct {
	Obj  string
	Name string
	Args []string
}

func (o Op) String() string {
	var b strings.Builder
	if o.Obj != "" {
		b.WriteString(o.Obj)
		b.WriteByte('.')
	}
	b.WriteString(o.Name)
	for _, a := range o.Args {
		b.WriteByte(' ')
		b.WriteString(a)
	}
	return b.String()
}

// ParseOp parses one line of a history.
func ParseOp(line string) (Op, error) {
	f := strings.Fields(line)
	if len(f) == 0 {
		return Op{}, errors.Newf("empty op")
	}
	var o Op
	name := f[0]
	if i := strings.IndexByte(name, '.'); i >= 0 {
		o.Obj, name = name[:i], name[i+1:]
	}
	o.Name = name
	o.Args = f[1:]
	if o.Name == "" {
		return Op{}, errors.Newf("op %q has no name", line)
	}
	return o, nil
}

// History is a sequence of ops with the seed and parameters that made it
// (for the report; replay needs only the ops).
type History struct {
	Comment []string // lines written as "# ..." above the ops
	Ops     []Op
}

// Write writes h as text: its comments as "# " lines, then one op a line.
func (h *History) Write(w io.Writer) error {
	bw := bufio.NewWriter(w)
	for _, c := range h.Comment {
		fmt.Fprintf(bw, "# %s\n", c)
	}
	for _, o := range h.Ops {
		fmt.Fprintln(bw, o.String())
	}
	return bw.Flush()
}

// ParseHistory reads a history written by Write: blank lines and lines
// starting with '#' are skipped.
func ParseHistory(r io.Reader) (*History, error) {
	h := &History{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		if strings.HasPrefix(line, "#") {
			h.Comment = append(h.Comment, strings.TrimSpace(strings.TrimPrefix(line, "#")))
			continue
		}
		o, err := ParseOp(line)
		if err != nil {
			return nil, errors.Wrapf(err, "line %d", n)
		}
		h.Ops = append(h.Ops, o)
	}
	return h, sc.Err()
}

// ReadHistoryFile reads a history from a file.
func ReadHistoryFile(path string) (*History, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ParseHistory(f)
}

// ValueBytes expands a value token: "vN*L" is "vN." repeated to L bytes,
// two apostrophes are the empty value, anything else is its own bytes.
func ValueBytes(tok string) []byte {
	if tok == "''" {
		return []byte{}
	}
	if i := strings.IndexByte(tok, '*'); i > 0 {
		n, err := strconv.Atoi(tok[i+1:])
		if err == nil && n >= 0 {
			unit := tok[:i] + "."
			return bytes.Repeat([]byte(unit), n/len(unit)+1)[:n]
		}
	}
	return []byte(tok)
}

// fmtVal prints a value for an op's output: short values as they are,
// long ones as a prefix, their length and a checksum.
func fmtVal(v []byte) string {
	switch {
	case len(v) == 0:
		return "''"
	case len(v) <= 24:
		return string(v)
	default:
		return fmt.Sprintf("%s…(%d,%08x)", v[:12], len(v), crc32.ChecksumIEEE(v))
	}
}

// bound returns the bound an argument names: "-" is nil.
func bound(a string) []byte {
	if a == "-" {
		return nil
	}
	return []byte(a)
}

// writeOpt splits an optional trailing write option ("sync" or "nowal") off
// args.
func writeOpt(args []string) ([]string, string) {
	if n := len(args); n > 0 && (args[n-1] == "sync" || args[n-1] == "nowal") {
		return args[:n-1], args[n-1]
	}
	return args, ""
}

// argN checks that an op has n arguments.
func argN(o Op, n int) error {
	if len(o.Args) != n {
		return errors.Newf("%q: want %d arguments, have %d", o.String(), n, len(o.Args))
	}
	return nil
}
