package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// The disk nemeses: each stops or damages one member's disk and records in the timeline what became of
// the member (stopped and how, refused to start and why, restarted, rejoined), and in Outcomes one line
// per cycle. What paddock must do (ARCHITECTURE.md, "The end of the log" and "Every failed write stops the
// member") is checked here and reported by the `disk-faults` checker; ZooKeeper's outcomes are recorded
// only (it makes no such promises: BUGS.md Z1, Z1b).

// diskKinds need the members' data on file systems of their own (fill) or the shim (power, EIO).
var (
	needsShim = map[string]bool{"disk-lose-unsynced": true, "disk-torn-write": true, "disk-eio": true}
	needsDisk = map[string]bool{"disk-full": true}
)

// memberFate is what a restarted member did within the wait.
type memberFate struct {
	rejoined bool   // it served (leader or follower)
	exited   bool   // it exited: refused to start
	code     string // its exit status when it exited
	why      string // the last line of its log that says why
	took     time.Duration
}

func (f memberFate) String() string {
	switch {
	case f.rejoined:
		return "rejoined"
	case f.exited:
		return "refused (exit " + f.code + ")"
	}
	return "not serving"
}

// exitOf is how member v's last process ended: its exit status, or "running".
func (n *Nemesis) exitOf(v int) string {
	out, _ := n.sh("exit", strconv.Itoa(v))
	return out
}

// waitExit waits up to d for member v to exit; its status, or "" if it still runs.
func (n *Nemesis) waitExit(v int, d time.Duration) string {
	deadline := time.Now().Add(d)
	for {
		if e := n.exitOf(v); e != "running" && e != "" {
			return e
		}
		if time.Now().After(deadline) {
			return ""
		}
		time.Sleep(200 * time.Millisecond)
	}
}

var whyLine = regexp.MustCompile(`(?i)error|refus|no space|input/output|exception|cut short|damage|corrupt|checksum`)

var startMark = regexp.MustCompile(`(?m)^=== \S+ start$`)

// sinceStart is member v's log from its last start on.
func (n *Nemesis) sinceStart(v int) string {
	b, err := os.ReadFile(filepath.Join(n.Dir, fmt.Sprintf("n%d", v), "member.log"))
	if err != nil {
		return ""
	}
	text := string(b)
	if m := startMark.FindAllStringIndex(text, -1); len(m) > 0 {
		text = text[m[len(m)-1][0]:]
	}
	return text
}

// why is what member v's log since its last start says went wrong (or what a start dropped), shortened:
// for paddock's `Error:` report, its innermost cause (the file and the offset); otherwise the last line
// that names an error.
func (n *Nemesis) why(v int) string {
	text := n.sinceStart(v)
	if i := strings.Index(text, "\nStack backtrace:"); i >= 0 {
		text = text[:i]
	}
	last := ""
	if i := strings.LastIndex(text, "\nError: "); i >= 0 {
		for _, l := range strings.Split(text[i+1:], "\n") {
			if l = strings.TrimSpace(l); l != "" && l != "Caused by:" && !strings.HasPrefix(l, "===") {
				last = l
			}
		}
	} else {
		for _, l := range strings.Split(text, "\n") {
			// ZooKeeper's last lines say only that it exits; the cause is above them.
			if strings.HasPrefix(l, "===") || strings.HasPrefix(strings.TrimSpace(l), "at ") ||
				strings.Contains(l, "Exiting JVM") || strings.Contains(l, "exiting abnormally") {
				continue
			}
			if whyLine.MatchString(l) {
				last = strings.TrimSpace(l)
			}
		}
	}
	if len(last) > 300 {
		last = last[:300] + "..."
	}
	return last
}

// logSince reports whether member v's log since its last start holds s.
func (n *Nemesis) logSince(v int, s string) bool { return strings.Contains(n.sinceStart(v), s) }

// startWatch starts member v (with a fault armed at the start, if armed is not empty) and waits up to
// 30 s for it to serve or exit; the timeline says which.
func (n *Nemesis) startWatch(kind string, v int, armed string) memberFate {
	start := time.Now()
	if armed != "" {
		n.sh("start", strconv.Itoa(v), armed)
	} else {
		n.sh("start", strconv.Itoa(v))
	}
	f := memberFate{}
	f.rejoined = n.waitMember(v, 30*time.Second)
	f.took = time.Since(start)
	if !f.rejoined {
		// waitMember returns as soon as the process is gone, which can be before the wrapper
		// records its exit status: wait for the status (a few seconds at most) rather than read
		// "running" and judge a refused start as a start (4 false disk-faults violations in the
		// long run of 7 Dec 2026, each a start refused about 3 s in on a loaded machine).
		if e := n.waitExit(v, 5*time.Second); e != "" {
			f.exited, f.code, f.why = true, e, n.why(v)
		}
	}
	switch {
	case f.rejoined:
		n.log(kind, "note", "member %d restarted and rejoined as %s after %.1f s", v, srvrMode(v), f.took.Seconds())
	case f.exited:
		n.log(kind, "note", "member %d restarted and refused to start: exit %s: %s", v, f.code, f.why)
	default:
		n.log(kind, "note", "member %d restarted but did not serve within 30 s", v)
	}
	return f
}

// recoverRefused does what an operator would for a member that will not start: (paddock) ask `paddock
// repair` what is damaged, then wipe its data (keeping myid) and start it, to rejoin empty.
func (n *Nemesis) recoverRefused(kind string, v int) memberFate {
	n.Refused[kind]++
	if n.Target == "paddock" {
		out, _ := n.sh("repair", strconv.Itoa(v))
		n.log(kind, "note", "member %d: paddock repair (dry run): %s", v, out)
	}
	n.sh("kill", strconv.Itoa(v))
	n.sh("disk", strconv.Itoa(v), "wipe")
	n.log(kind, "note", "member %d: an operator wipes its data (myid kept) and starts it", v)
	return n.startWatch(kind, v, "")
}

// outcome counts one cycle's story for the table.
func (n *Nemesis) outcome(kind string, story ...string) {
	if n.Outcomes[kind] == nil {
		n.Outcomes[kind] = map[string]int{}
	}
	n.Outcomes[kind][strings.Join(story, ", ")]++
}

// expect records a broken promise of paddock's (the disk-faults checker); ZooKeeper's are not judged.
func (n *Nemesis) expect(ok bool, kind string, format string, args ...interface{}) {
	if ok || n.Target != "paddock" {
		return
	}
	msg := fmt.Sprintf("cycle %d %s: ", n.cycle, kind) + fmt.Sprintf(format, args...)
	n.DiskViolations = append(n.DiskViolations, msg)
	n.log(kind, "note", "VIOLATION: %s", msg)
}

// afterRestart finishes a cycle whose member was started again: a refused start is recovered.
func (n *Nemesis) afterRestart(kind string, v int, f memberFate, story []string) {
	if f.rejoined {
		n.outcome(kind, append(story, "rejoined")...)
		return
	}
	story = append(story, f.String())
	g := n.recoverRefused(kind, v)
	n.outcome(kind, append(story, "wiped, "+g.String())...)
}

// runDisk runs one cycle of a disk nemesis on a random member.
func (n *Nemesis) runDisk(kind string, hold time.Duration) {
	v := n.shuffled()[0]
	vs := strconv.Itoa(v)
	switch kind {
	case "disk-truncate-log", "disk-corrupt-log", "disk-corrupt-snapshot", "disk-wipe":
		fault := strings.TrimPrefix(kind, "disk-")
		n.sh("kill", vs)
		out, err := n.sh("disk", vs, fault)
		n.log(kind, "inject", "member %d killed; %s: %s (%v)", v, fault, out, err)
		f := n.startWatch(kind, v, "")
		damaged := err == nil && !strings.Contains(out, "left alone") && !strings.HasPrefix(out, "no file")
		switch kind {
		case "disk-truncate-log":
			// A segment is allocated whole: one shorter than its header says was cut, and refuses the
			// start (finding H1: format 1 read it as the log's end and dropped acknowledged records).
			n.expect(!damaged || f.exited, kind, "member %d started on a log segment cut inside its last record (%s): it must refuse", v, out)
		case "disk-corrupt-log":
			n.expect(!damaged || f.exited, kind, "member %d started on a log whose last record's sector fails its checksum (%s): it must refuse", v, out)
		case "disk-wipe":
			n.expect(f.rejoined, kind, "member %d did not rejoin after its data was wiped: %s", v, f)
		}
		if f.exited && n.Target == "paddock" && (kind == "disk-truncate-log" || kind == "disk-corrupt-log") {
			out, _ := n.sh("repair", vs)
			n.expect(strings.HasPrefix(out, "exit 1"), kind, "the start refused member %d's log but paddock repair's dry run says it opens: %s", v, out)
		}
		n.afterRestart(kind, v, f, nil)

	case "disk-lose-unsynced", "disk-torn-write":
		// The member's host loses power at its next durability event (a synced write or an fsync):
		// nothing it had not made durable survives; with a torn write, a random half of the sectors of
		// the write in flight do. The shim keeps that state; the member restarts on it.
		arm := "cut"
		if kind == "disk-torn-write" {
			arm = "torn-write" // paddock's log: one O_DIRECT|O_DSYNC write per group commit
			if n.Target != "paddock" {
				arm = "torn-sync" // ZooKeeper writes its log through the page cache and fdatasyncs it
			}
		}
		n.sh("arm", vs, arm)
		code := n.waitExit(v, 5*time.Second)
		fired, _ := n.sh("fired", vs)
		story := []string{}
		if code == "" {
			n.sh("kill", vs)
			code = n.exitOf(v)
			fired = "no durability event within 5 s: the power went between two writes"
			story = append(story, "power lost between writes")
		} else {
			story = append(story, "power cut")
		}
		out, err := n.sh("powerloss", vs)
		n.log(kind, "inject", "member %d lost power (%s; exit %s); %s (%v)", v, fired, code, out, err)
		time.Sleep(hold)
		f := n.startWatch(kind, v, "")
		if f.rejoined && n.logSince(v, "dropped a write cut short") {
			story = append(story, "torn tail dropped")
		}
		n.expect(f.rejoined, kind, "member %d did not start again after a power loss (%s): %s %s", v, fired, f, f.why)
		n.afterRestart(kind, v, f, story)

	case "disk-full":
		// The member's file system fills up (a filler file). paddock must stop by itself with exit 1
		// at the first write that needs space (a new segment, a snapshot, RocksDB), or, restarted on
		// the full disk, refuse the start with exit 1; then space is freed and it starts and rejoins.
		out, _ := n.sh("fill", vs)
		n.log(kind, "inject", "member %d's disk: %s", v, out)
		wait := hold + 2*time.Second
		code := n.waitExit(v, wait)
		story := []string{}
		if code != "" {
			why := n.why(v)
			n.log(kind, "note", "member %d stopped by itself on the full disk: exit %s: %s", v, code, why)
			story = append(story, "stopped (exit "+code+")")
			n.expect(code == "1", kind, "member %d stopped on a full disk with status %s, not 1: %s", v, code, why)
		} else {
			// Nothing it wrote needed a new block (its segment and RocksDB's files are allocated ahead).
			n.sh("stop", vs)
			n.log(kind, "note", "member %d still served after %s on the full disk; stopped (SIGTERM) and started on it", v, wait)
			f := n.startWatch(kind, v, "")
			switch {
			case f.exited:
				story = append(story, "served on, start on full disk refused (exit "+f.code+")")
				n.expect(f.code == "1", kind, "member %d's start on a full disk ended with status %s, not 1: %s", v, f.code, f.why)
			case f.rejoined:
				story = append(story, "served on, started on full disk")
				n.expect(false, kind, "member %d started on a full disk (it must check the space a start needs)", v)
			default:
				story = append(story, "served on, start on full disk hung")
			}
			n.sh("kill", vs)
		}
		out, _ = n.sh("unfill", vs)
		n.log(kind, "heal", "member %d's disk: %s", v, out)
		f := n.startWatch(kind, v, "")
		n.expect(f.rejoined, kind, "member %d did not start again once space was freed: %s %s", v, f, f.why)
		n.afterRestart(kind, v, f, story)

	case "disk-eio":
		// The next write to the log, fsync or directory fsync fails with EIO (in turn). paddock must
		// stop with exit 1, never touching the failed file again, and start again on its data.
		calls := []string{"segwrite", "fsync", "dirsync"}
		if n.Target != "paddock" {
			calls = []string{"segwrite", "fsync"} // ZooKeeper does not fsync directories
		}
		call := calls[n.Cycles[kind]%len(calls)]
		n.sh("arm", vs, "eio:"+call)
		n.log(kind, "inject", "member %d: the next %s fails with EIO", v, call)
		story := []string{}
		code := n.waitExit(v, hold+2*time.Second)
		if fired, _ := n.sh("fired", vs); code == "" && fired != "" {
			// It failed and did not exit (ZooKeeper restarts its server inside the process).
			n.sh("stop", vs)
			code = n.exitOf(v)
			n.log(kind, "note", "member %d: %s, and it still ran %s later; stopped (SIGTERM): exit %s", v, fired, hold+2*time.Second, code)
			story = append(story, "ran on")
		} else if code == "" {
			// Not reached while it served (fsyncs come at new segments and snapshots): a start syncs.
			n.sh("stop", vs)
			n.log(kind, "note", "member %d made no %s in %s; stopped (SIGTERM) and started with the EIO armed", v, call, hold+2*time.Second)
			n.sh("start", vs, "eio:"+call)
			code = n.waitExit(v, 20*time.Second)
			story = append(story, "at the start")
			if code == "" {
				n.sh("kill", vs)
				code = "running"
			}
		}
		fired, _ := n.sh("fired", vs)
		why := n.why(v)
		if strings.Contains(fired, "/OPTIONS-") {
			// RocksDB ignores a failed write of its OPTIONS file, which recovery does not need
			// (docs/durability.md): the member serves on, as server/tests/power_loss.rs expects.
			story = append(story, "EIO on RocksDB's OPTIONS file (ignored), exit "+code)
			n.log(kind, "note", "member %d: %s: RocksDB's OPTIONS file, whose failure RocksDB ignores; status %s", v, fired, code)
		} else if fired == "" {
			story = append(story, "EIO not reached")
			n.log(kind, "note", "member %d never made a %s: no EIO", v, call)
		} else {
			story = append(story, call+" EIO, exit "+code)
			n.log(kind, "note", "member %d: %s; it exited with status %s: %s", v, fired, code, why)
			n.expect(code == "1", kind, "member %d ended with status %s after an EIO (%s), not 1: %s", v, code, fired, why)
			n.expect(n.logSince(v, "Input/output error") || n.logSince(v, "os error 5"), kind, "member %d's log does not say it stopped on EIO (%s): %s", v, fired, why)
			if after := readFileString(filepath.Join(n.Dir, fmt.Sprintf("n%d", v), "shadow", "after-eio")); after != "" {
				n.expect(false, kind, "member %d wrote or synced the failed file again: %s", v, strings.TrimSpace(after))
			}
		}
		f := n.startWatch(kind, v, "")
		n.expect(f.rejoined, kind, "member %d did not start again on its data after the EIO: %s %s", v, f, f.why)
		n.afterRestart(kind, v, f, story)
	}
}

func readFileString(p string) string {
	b, _ := os.ReadFile(p)
	return string(b)
}

// checkDisk is the disk-faults verdict: the cycles judged and paddock's broken promises.
func (n *Nemesis) checkDisk() Verdict {
	v := Verdict{Checker: "disk-faults"}
	for k, c := range n.Cycles {
		if strings.HasPrefix(k, "disk-") {
			v.Checked += c
		}
	}
	v.Violations = append(v.Violations, n.DiskViolations...)
	if n.Target != "paddock" {
		v.Note = "outcomes recorded, not judged (ZooKeeper makes no such promise)"
	}
	return v
}

// outcomeNote is a kind's outcomes for the table: "3 x refused (exit 1), wiped, rejoined; 1 x rejoined".
func outcomeNote(m map[string]int) string {
	var parts []string
	for _, k := range sortedKeys(m) {
		parts = append(parts, fmt.Sprintf("%d x %s", m[k], k))
	}
	return strings.Join(parts, "; ")
}
