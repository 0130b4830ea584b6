package main

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The load average cannot tell other work from the bench's own: a child
// reading with one goroutine is a load of 1 by itself, and the 1-minute
// average still holds the previous child's. What a reader of the figures
// needs is how much of the machine other processes took while a child was
// measured. cpuMark records the machine's busy time and the bench's own CPU
// time (the parent's and its waited-for children's); two marks around a
// child give the share of the machine's CPU capacity that went to anything
// else, the hypervisor's steal included.
type cpuMark struct {
	at   time.Time
	busy time.Duration // all CPUs' busy time since boot, from /proc/stat
	own  time.Duration // this process's CPU time and its waited-for children's
	ok   bool
}

// userHZ is the unit of /proc/stat's times: USER_HZ, 100 on every Linux
// architecture Go supports.
const userHZ = 100

func markCPU() cpuMark {
	m := cpuMark{at: time.Now()}
	m.busy, m.ok = machineBusy()
	var self, children syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &self) != nil || syscall.Getrusage(syscall.RUSAGE_CHILDREN, &children) != nil {
		m.ok = false
	}
	m.own = rusageCPU(&self) + rusageCPU(&children)
	return m
}

func rusageCPU(r *syscall.Rusage) time.Duration {
	return time.Duration(r.Utime.Nano() + r.Stime.Nano())
}

// machineBusy returns the busy time of all CPUs since boot: /proc/stat's
// user, nice, system, irq, softirq and steal (guest time is inside user).
func machineBusy() (time.Duration, bool) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, false
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return 0, false
	}
	var ticks int64
	for _, i := range []int{1, 2, 3, 6, 7, 8} { // user nice system (idle iowait) irq softirq steal
		v, err := strconv.ParseInt(f[i], 10, 64)
		if err != nil {
			return 0, false
		}
		ticks += v
	}
	return time.Duration(ticks) * time.Second / userHZ, true
}

// otherCPUShare returns the share of the machine's CPU capacity (cpus
// processors from a to b) that processes other than the bench used, or
// false when it is not known. Clock-tick rounding can make it slightly
// negative; it is clamped at 0.
func otherCPUShare(a, b cpuMark, cpus int) (float64, bool) {
	wall := b.at.Sub(a.at)
	if !a.ok || !b.ok || wall <= 0 || cpus < 1 {
		return 0, false
	}
	other := (b.busy - a.busy) - (b.own - a.own)
	return max(0, float64(other)/float64(wall*time.Duration(cpus))), true
}

// percent formats a share as a percentage with about three digits.
func percent(v float64) string { return fmt3(100*v) + "%" }

// underLoad says whether other work took enough of the machine during the
// run to mark the report: 5% of its capacity (a tenth of a core of two)
// while some child ran. Runs recorded before the share was measured are
// judged by the 1-minute load average, which counts the bench's own work.
func underLoad(m runMeta) (bool, string) {
	if len(m.OtherCPU) > 0 {
		if mx := slices.Max(m.OtherCPU); mx >= 0.05 {
			return true, fmt.Sprintf("other work took up to %s of the machine's CPU while a child ran", percent(mx))
		}
		return false, ""
	}
	if len(m.Load1) > 0 && slices.Max(m.Load1) >= 0.5 {
		return true, fmt.Sprintf("the 1-minute load average reached %s on %d cores (it counts the bench's own children too)", fmt3(slices.Max(m.Load1)), m.CPUs)
	}
	return false, ""
}
