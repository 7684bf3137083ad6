package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// runSummary is a run's verdict.json: what report writes and summarize reads.
type runSummary struct {
	Target      string                    `json:"target"`
	Quorum      string                    `json:"quorum,omitempty"` // TLS or plaintext (empty in older runs)
	Nodes       int                       `json:"nodes"`
	Seed        int64                     `json:"seed"`
	Seconds     float64                   `json:"seconds"`
	Cycles      map[string]int            `json:"cycles"`
	Refused     map[string]int            `json:"refused"`
	Outcomes    map[string]map[string]int `json:"outcomes,omitempty"` // per disk kind: what became of the member, per cycle
	Verdicts    []Verdict                 `json:"verdicts"`
	OK          bool                      `json:"ok"`
	Ops         map[string]*opCounts      `json:"ops"`
	LateRefused int                       `json:"late_refused"`
	Healthy     bool                      `json:"healthy"`
}

type opCounts struct{ OK, Fail, Info int }

// countOps counts each workload's operations by outcome (events and markers are not operations).
func countOps(ops []Op) map[string]*opCounts {
	perW := map[string]*opCounts{}
	for _, op := range ops {
		if op.F == "event" || op.F == "round-end" || op.F == "end" {
			continue
		}
		c := perW[op.W]
		if c == nil {
			c = &opCounts{}
			perW[op.W] = c
		}
		switch op.Type {
		case "ok":
			c.OK++
		case "fail":
			c.Fail++
		default:
			c.Info++
		}
	}
	return perW
}

// table is the printed verdict of one run or of many added up: cycles per nemesis kind, operations per
// workload, per checker what it judged and how many violations, then every violation and note.
type table struct {
	cycles, refused map[string]int
	outcomes        map[string]map[string]int
	ops             map[string]*opCounts
	checks          []Verdict // one per checker, in first-seen order; Violations carry their run's tag
	late            int
	notes           []string
}

func newTable() *table {
	return &table{cycles: map[string]int{}, refused: map[string]int{}, outcomes: map[string]map[string]int{}, ops: map[string]*opCounts{}}
}

// addRun adds one run's results; tag (the run's name, or "" for a single run) prefixes its violations.
func (t *table) addRun(cycles, refused map[string]int, outcomes map[string]map[string]int, ops map[string]*opCounts, verdicts []Verdict, late int, tag string) {
	for k, m := range outcomes {
		if t.outcomes[k] == nil {
			t.outcomes[k] = map[string]int{}
		}
		for o, c := range m {
			t.outcomes[k][o] += c
		}
	}
	for k, n := range cycles {
		t.cycles[k] += n
	}
	for k, n := range refused {
		t.refused[k] += n
	}
	for w, c := range ops {
		if t.ops[w] == nil {
			t.ops[w] = &opCounts{}
		}
		t.ops[w].OK += c.OK
		t.ops[w].Fail += c.Fail
		t.ops[w].Info += c.Info
	}
	t.late += late
	for _, v := range verdicts {
		i := 0
		for i < len(t.checks) && t.checks[i].Checker != v.Checker {
			i++
		}
		if i == len(t.checks) {
			t.checks = append(t.checks, Verdict{Checker: v.Checker, Note: v.Note})
		} else if tag != "" {
			t.checks[i].Note = "" // notes are per run: listed below the table
		}
		t.checks[i].Checked += v.Checked
		for _, msg := range v.Violations {
			if tag != "" {
				msg = "(" + tag + ") " + msg
			}
			t.checks[i].Violations = append(t.checks[i].Violations, msg)
		}
		if tag != "" && strings.Contains(v.Note, "gave up") {
			t.notes = append(t.notes, fmt.Sprintf("NOTE %s (%s): %s", v.Checker, tag, v.Note))
		}
	}
}

// bad is the number of violations.
func (t *table) bad() int {
	n := 0
	for _, c := range t.checks {
		n += len(c.Violations)
	}
	return n
}

func (t *table) write(w io.Writer) {
	fmt.Fprintf(w, "%-22s | %6s | %s\n", "nemesis", "cycles", "note")
	total := 0
	for _, k := range sortedKeys(t.cycles) {
		note := ""
		if o := t.outcomes[k]; len(o) > 0 {
			note = outcomeNote(o)
		} else if r := t.refused[k]; r > 0 {
			note = fmt.Sprintf("member refused to rejoin %d time(s); wiped and restarted", r)
		}
		fmt.Fprintf(w, "%-22s | %6d | %s\n", k, t.cycles[k], note)
		total += t.cycles[k]
	}
	fmt.Fprintf(w, "%-22s | %6d |\n\n", "total", total)
	fmt.Fprintf(w, "%-22s | %8s | %7s | %13s\n", "workload", "ok", "failed", "indeterminate")
	for _, k := range sortedKeys(t.ops) {
		c := t.ops[k]
		fmt.Fprintf(w, "%-22s | %8d | %7d | %13d\n", k, c.OK, c.Fail, c.Info)
	}
	fmt.Fprintf(w, "\n%-22s | %8s | %10s | %s\n", "checker", "checked", "violations", "note")
	for _, c := range t.checks {
		note := c.Note
		if c.Checker == "lock-fencing" {
			note = fmt.Sprintf("stale writes seen at the store, each with an older token (a fencing store refuses them): %d", t.late)
		}
		fmt.Fprintf(w, "%-22s | %8d | %10d | %s\n", c.Checker, c.Checked, len(c.Violations), note)
	}
	for _, c := range t.checks {
		for _, msg := range c.Violations {
			fmt.Fprintf(w, "VIOLATION %s: %s\n", c.Checker, msg)
		}
	}
	for _, n := range t.notes {
		fmt.Fprintln(w, n)
	}
}

// sortedKeys is a map's keys in order, for tables and reports that do not depend on map order.
func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// summarize prints one table for many runs (longrun.sh's segments), each violation and note naming the
// run it came from. A run folder without a verdict (the driver died) is listed and makes the exit
// status 1, as any violation does.
func summarize(dirs []string) int {
	t := newTable()
	seconds, runs, missing := 0.0, 0, 0
	targets := map[string]bool{}
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, "verdict.json"))
		var r runSummary
		if err == nil {
			err = json.Unmarshal(b, &r)
		}
		if err != nil {
			t.notes = append(t.notes, fmt.Sprintf("MISSING %s: no verdict (%v)", d, err))
			missing++
			continue
		}
		runs++
		target := fmt.Sprintf("%s, %d members", r.Target, r.Nodes)
		if r.Quorum != "" {
			target += ", quorum " + r.Quorum
		}
		targets[target] = true
		seconds += r.Seconds
		tag := fmt.Sprintf("%s, seed %d", filepath.Base(d), r.Seed)
		t.addRun(r.Cycles, r.Refused, r.Outcomes, r.Ops, r.Verdicts, r.LateRefused, tag)
		if !r.Healthy {
			t.notes = append(t.notes, fmt.Sprintf("NOTE %s: not every member serving after the final heal", tag))
		}
	}
	fmt.Printf("long run: %s; %d runs, %.0f s of faults\n\n", strings.Join(sortedKeys(targets), " + "), runs, seconds)
	t.write(os.Stdout)
	if t.bad()+missing > 0 {
		return 1
	}
	return 0
}
