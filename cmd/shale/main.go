package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/cockroachdb/errors"
	"github.com/shaledb/shale/driver"
	"github.com/shaledb/shale/engine"
	"github.com/shaledb/shale/ioctx"
)

// Exit codes (see the package doc). Scripts rely on them: do not renumber.
const (
	exitOK      = 0
	exitProblem = 1
	exitUsage   = 2
	exitFailure = 3
)

func main() {
	// An interrupt cancels the context, so a long bench or verify stops at
	// the next operation and still removes its temporary directory.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := runContext(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run runs the command line args (without the program name), writing data to
// stdout and errors and progress to stderr, and returns the exit code. Tests
// call it in-process.
func run(args []string, stdout, stderr io.Writer) int {
	return runContext(context.Background(), args, stdout, stderr)
}

// command is one subcommand. run returns nil, or an error whose exit code
// exitCode derives. The table is read-only after init.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, env *cmdEnv, args []string) error
}

// cmdEnv is what a command writes to, and the name it reports errors under.
// One command uses it at a time.
type cmdEnv struct {
	name           string // "bench", "sst dump", ...
	stdout, stderr io.Writer
}

var commands []command

func init() {
	// Assigned in init: the help command refers to the table.
	commands = []command{
		{"bench", "fill, compact and time every read API; print the per-activity histograms", runBench},
		{"stats", "open a database read-only and print its statistics", runStats},
		{"verify", "verify the block (and whole-file) checksums of a database", runVerify},
		{"checkpoint", "write a consistent, openable copy of a database into a new directory", runCheckpoint},
		{"sst dump", "print a table file: footer, properties, index, entries", runSSTDump},
		{"wal dump", "print a write-ahead log: records and their operations", runWALDump},
		{"dsn", "print the DSN parameter table", runDSN},
		{"version", "print the shale and Go versions and the on-disk formats read and written", runVersion},
		{"help", "print usage; \"shale help <command>\" for a command's flags", runHelp},
	}
}

func runContext(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		printUsage(stderr)
		return exitUsage
	}
	switch args[0] {
	case "-h", "-help", "--help":
		printUsage(stdout)
		return exitOK
	}
	cmd, rest, ok := findCommand(args)
	if !ok {
		if subs := subcommands(args[0]); subs != nil {
			// "shale sst" or "shale sst load": the group exists, so
			// point to its commands rather than print the whole usage.
			fmt.Fprintf(stderr, "shale: %s\n", groupMessage(args, subs))
			return exitUsage
		}
		fmt.Fprintf(stderr, "shale: unknown command %q\n", strings.Join(args[:min(len(args), 2)], " "))
		printUsage(stderr)
		return exitUsage
	}
	env := &cmdEnv{name: cmd.name, stdout: stdout, stderr: stderr}
	err := cmd.run(ctx, env, rest)
	if errors.Is(err, errHelpShown) {
		return exitOK
	}
	code := exitCode(err)
	if err != nil {
		fmt.Fprintf(stderr, "shale %s: %s\n", cmd.name, oneLine(err))
	}
	return code
}

// findCommand matches the longest command name at the start of args: "sst
// dump" takes two words.
func findCommand(args []string) (command, []string, bool) {
	for _, c := range commands {
		words := strings.Fields(c.name)
		if len(args) >= len(words) && strings.Join(args[:len(words)], " ") == c.name {
			return c, args[len(words):], true
		}
	}
	return command{}, nil, false
}

func printUsage(w io.Writer) {
	fmt.Fprint(w, `shale is the command-line tool of the shale key-value engine.

Usage:

	shale <command> [flags] [args]

Commands:

`)
	for _, c := range commands {
		fmt.Fprintf(w, "\t%-10s %s\n", c.name, c.summary)
	}
	fmt.Fprint(w, `
Exit codes: 0 ok; 1 a problem was found (corruption, wrong result);
2 usage error; 3 runtime failure (cannot open, IO error, interrupted).

Run "shale help <command>" for a command's flags. With no flags,
"shale bench" runs on a temporary directory that it removes at the end.
`)
}

// subcommands returns the names of the commands of two words whose first
// is word ("sst" gives "sst dump"), nil when there are none.
func subcommands(word string) []string {
	var subs []string
	for _, c := range commands {
		if first, _, two := strings.Cut(c.name, " "); two && first == word {
			subs = append(subs, c.name)
		}
	}
	return subs
}

// groupMessage says what to run instead of args, whose first word names the
// group of commands subs but which name none of them.
func groupMessage(args []string, subs []string) string {
	quoted := make([]string, len(subs))
	for i, s := range subs {
		quoted[i] = strconv.Quote("shale " + s)
	}
	if len(args) == 1 {
		return fmt.Sprintf("%q needs a subcommand: %s (\"shale help %s\" for its usage)",
			args[0], strings.Join(quoted, ", "), subs[0])
	}
	return fmt.Sprintf("unknown command %q: did you mean %s?", strings.Join(args[:2], " "), strings.Join(quoted, " or "))
}

const helpUsage = `help [command]`

const helpDoc = `
Prints the list of commands, or with a command's name ("shale help sst dump")
its usage and flags, as "shale <command> -h" does.`

func runHelp(_ context.Context, env *cmdEnv, args []string) error {
	if len(args) == 0 {
		printUsage(env.stdout)
		return nil
	}
	cmd, _, ok := findCommand(args)
	if ok && cmd.name == "help" || !ok && (args[0] == "-h" || args[0] == "-help" || args[0] == "--help") {
		fs := newFlagSet(env, helpUsage, helpDoc)
		fs.SetOutput(env.stdout)
		fs.Usage()
		return nil
	}
	if !ok {
		subs := subcommands(args[0])
		switch {
		case len(args) == 1 && len(subs) == 1:
			// "shale help sst": the group's one command's usage. subs
			// comes from the command table, so the lookup cannot fail.
			cmd, _, _ = findCommand(strings.Fields(subs[0]))
		case subs != nil:
			return usageErrorf("%s", groupMessage(args, subs))
		default:
			return usageErrorf("unknown command %q", strings.Join(args, " "))
		}
	}
	// Every command prints its usage for -h and returns errHelpShown.
	err := cmd.run(context.Background(), &cmdEnv{name: cmd.name, stdout: env.stdout, stderr: env.stderr}, []string{"-h"})
	if errors.Is(err, errHelpShown) {
		return nil
	}
	return err
}

// exitError carries the exit code of a failed command. It is immutable.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// errHelpShown is returned by a command whose usage was asked for with -h
// and printed; the exit code is 0.
var errHelpShown = errors.New("help shown")

// usageErrorf returns an error that exits with exitUsage.
// dsnArgument takes the database's DSN from -dsn or, as checkpoint takes
// its directories, from the one argument: "shale verify DIR" works as
// "shale verify -dsn DIR".
func dsnArgument(fs *flag.FlagSet, dsn *string) error {
	switch {
	case fs.NArg() > 1:
		return usageErrorf("unexpected argument %q", fs.Arg(1))
	case fs.NArg() == 1 && *dsn != "":
		return usageErrorf("the DSN is given twice: -dsn %q and argument %q", *dsn, fs.Arg(0))
	case fs.NArg() == 1:
		*dsn = fs.Arg(0)
	case *dsn == "":
		return usageErrorf("a DSN is required: -dsn DSN, or DSN as the argument")
	}
	return nil
}

func usageErrorf(format string, args ...any) error {
	return &exitError{code: exitUsage, err: errors.Newf(format, args...)}
}

// problem returns err with exit code exitProblem: the operation ran and
// found something wrong.
func problem(err error) error {
	if err == nil {
		return nil
	}
	return &exitError{code: exitProblem, err: err}
}

// problemf is problem(errors.Newf(...)).
func problemf(format string, args ...any) error { return problem(errors.Newf(format, args...)) }

// exitCode maps a command's error to the exit code. Errors that say what
// they are (exitError) keep their code; otherwise corruption is a problem
// found (1), a misused argument a usage error (2) and anything else a
// runtime failure (3).
func exitCode(err error) int {
	var ee *exitError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &ee):
		return ee.code
	case errors.Is(err, driver.ErrCorruption):
		return exitProblem
	}
	return exitFailure
}

// oneLine flattens an error message for a one-line report: joined errors
// (errors.Join) print one per line.
func oneLine(err error) string {
	return strings.ReplaceAll(strings.TrimSpace(err.Error()), "\n", "; ")
}

// newFlagSet returns a flag set for the command whose usage line (after
// "shale ") is usage and whose longer description is doc.
func newFlagSet(env *cmdEnv, usage, doc string) *flag.FlagSet {
	fs := flag.NewFlagSet("shale "+env.name, flag.ContinueOnError)
	fs.Usage = func() {
		out := fs.Output()
		fmt.Fprintf(out, "Usage: shale %s\n\n%s\n", strings.TrimSpace(usage), strings.TrimSpace(doc))
		if hasFlags(fs) {
			fmt.Fprintf(out, "\nFlags:\n")
			fs.PrintDefaults()
		}
	}
	return fs
}

func hasFlags(fs *flag.FlagSet) bool {
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	return n > 0
}

// parseFlags parses args with fs. -h prints the usage to stdout and returns
// errHelpShown (exit 0). A bad flag or value is a usage error (exit 2) whose
// message names it; the flag package's own printing is silenced so that
// every error has the "shale <command>: " form.
func parseFlags(fs *flag.FlagSet, env *cmdEnv, args []string) error {
	for _, a := range args {
		if a == "-h" || a == "-help" || a == "--help" {
			fs.SetOutput(env.stdout)
			fs.Usage()
			return errHelpShown
		}
		if a == "--" || !strings.HasPrefix(a, "-") {
			break
		}
	}
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		return usageErrorf("%s (run \"shale help %s\" for usage)", err, env.name)
	}
	return nil
}

// priorityNames maps the -priority spellings to priorities.
var priorityNames = map[string]ioctx.Priority{
	"total": ioctx.PriorityTotal, "low": ioctx.PriorityLow, "mid": ioctx.PriorityMid,
	"high": ioctx.PriorityHigh, "user": ioctx.PriorityUser,
}

func parsePriority(s string) (ioctx.Priority, error) {
	p, ok := priorityNames[strings.ToLower(s)]
	if !ok {
		return 0, usageErrorf("invalid -priority %q: want total, low, mid, high or user", s)
	}
	return p, nil
}

// sizeFlag is a byte size flag that takes plain bytes or units ("64MiB"),
// as DSN sizes do. Like every flag.Value, it is set while flags are parsed,
// by one goroutine.
type sizeFlag struct{ n int64 }

func (f *sizeFlag) String() string {
	if f == nil {
		return "0"
	}
	return driver.FormatSize(f.n)
}

func (f *sizeFlag) Set(s string) error {
	n, err := driver.ParseSize(s)
	if err != nil {
		// The flag package adds the flag's name; drop the driver's prefix.
		return errors.New(strings.TrimPrefix(err.Error(), "driver: "))
	}
	f.n = n
	return nil
}

// dsnBuilder assembles a DSN from a path and parameters, where later
// settings override earlier ones. It is not safe for concurrent use.
type dsnBuilder struct {
	path   string
	params []driver.Param
}

// parseDSNBuilder starts a builder from a user's DSN. A malformed DSN is a
// usage error that names it.
func parseDSNBuilder(dsn string) (*dsnBuilder, error) {
	d, err := driver.ParseDSN(dsn)
	if err != nil {
		return nil, &exitError{code: exitUsage, err: err}
	}
	return &dsnBuilder{path: d.Path, params: d.Params}, nil
}

// set sets key to value, replacing an earlier value.
func (b *dsnBuilder) set(key, value string) {
	for i := range b.params {
		if b.params[i].Key == key {
			b.params[i].Value = value
			return
		}
	}
	b.params = append(b.params, driver.Param{Key: key, Value: value})
}

// setDefault sets key to value unless it is already set.
func (b *dsnBuilder) setDefault(key, value string) {
	if _, ok := b.get(key); !ok {
		b.set(key, value)
	}
}

func (b *dsnBuilder) get(key string) (string, bool) {
	for _, p := range b.params {
		if p.Key == key {
			return p.Value, true
		}
	}
	return "", false
}

// merge applies "k=v&k=v" parameters over the builder's. A malformed list
// is a usage error.
func (b *dsnBuilder) merge(params string) error {
	if params == "" {
		return nil
	}
	d, err := driver.ParseDSN("x?" + strings.TrimPrefix(params, "?"))
	if err != nil {
		return usageErrorf("invalid -dsn-params %q: %s", params, strings.TrimPrefix(err.Error(), "driver: "))
	}
	for _, p := range d.Params {
		b.set(p.Key, p.Value)
	}
	return nil
}

// parsedDSN is a DSN as the engine's parser reads it: the database's
// directory and its options.
type parsedDSN struct {
	Dir string
	*engine.Options
}

// build formats the DSN and checks it with the engine's parser, so an
// unknown key or bad value is a usage error that names it before anything
// is opened.
func (b *dsnBuilder) build() (string, parsedDSN, error) {
	dsn := driver.FormatDSN(b.path, b.params)
	dir, opts, err := engine.ParseDSN(dsn)
	if err != nil {
		return "", parsedDSN{}, &exitError{code: exitUsage, err: err}
	}
	return dsn, parsedDSN{dir, opts}, nil
}

// openDB opens dsn through the façade and connects at once (the façade
// connects lazily), so that a database that cannot be opened fails here:
// corruption found while opening is exit code 1, anything else 3.
func openDB(ctx context.Context, dsn string) (*driver.DB, error) {
	db, err := driver.Open(engine.DriverName, dsn)
	if err != nil {
		return nil, &exitError{code: exitUsage, err: err}
	}
	if err := db.Ping(ctx); err != nil {
		_ = db.Close()
		if errors.Is(err, driver.ErrCorruption) {
			return nil, problem(err)
		}
		if nerr := notADatabase(dsn); nerr != nil {
			err = nerr
		}
		return nil, &exitError{code: exitFailure, err: err}
	}
	return db, nil
}

// notADatabase returns the error to report instead of a failed open's when
// the DSN's path exists but is not a database: a file, or a directory
// without a CURRENT file (the engine says the database "does not exist",
// which reads wrong for a directory that does). nil when the path is
// missing (the engine's message is right), or holds a CURRENT file (the
// failure is something else).
func notADatabase(dsn string) error {
	dir, _, err := engine.ParseDSN(dsn)
	if err != nil {
		return nil
	}
	info, err := os.Stat(dir)
	switch {
	case err != nil:
		return nil
	case !info.IsDir():
		return errors.Newf("%s is not a shale database: it is a file, not a directory", dir)
	}
	if _, err := os.Stat(filepath.Join(dir, "CURRENT")); !errors.Is(err, os.ErrNotExist) {
		return nil
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	if len(ents) == 0 {
		return errors.Newf("%s is not a shale database: the directory is empty (no CURRENT file)", dir)
	}
	entries := "entries"
	if len(ents) == 1 {
		entries = "entry"
	}
	return errors.Newf("%s is not a shale database: no CURRENT file among its %d %s (%s)",
		dir, len(ents), entries, entryNames(ents, 3))
}

// entryNames lists the first n of ents' names, and how many more there are.
func entryNames(ents []os.DirEntry, n int) string {
	var names []string
	for _, e := range ents[:min(n, len(ents))] {
		names = append(names, e.Name())
	}
	if more := len(ents) - n; more > 0 {
		names = append(names, fmt.Sprintf("and %d more", more))
	}
	return strings.Join(names, ", ")
}

// isTerminal reports whether w is a terminal, where progress bars may be
// drawn.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
