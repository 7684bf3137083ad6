package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// runSummary is what summarize reads of a run's verdict.json.
type runSummary struct {
	Target      string                                  `json:"target"`
	Nodes       int                                     `json:"nodes"`
	Seed        int64                                   `json:"seed"`
	Seconds     float64                                 `json:"seconds"`
	Cycles      map[string]int                          `json:"cycles"`
	Refused     map[string]int                          `json:"refused"`
	Verdicts    []Verdict                               `json:"verdicts"`
	OK          bool                                    `json:"ok"`
	Ops         map[string]struct{ OK, Fail, Info int } `json:"ops"`
	LateRefused int                                     `json:"late_refused"`
	Healthy     bool                                    `json:"healthy"`
}

// summarize prints one table for many runs (longrun.sh's segments): cycles per nemesis kind, operations
// per workload, and per checker what it judged and every violation, naming the run it came from. A run
// folder without a verdict (the driver died) is listed as such and makes the exit status 1.
func summarize(dirs []string) int {
	cycles, refused := map[string]int{}, map[string]int{}
	type opc struct{ OK, Fail, Info int }
	ops := map[string]*opc{}
	type chk struct{ checked, bad int }
	checks := map[string]*chk{}
	var order []string
	var violations, missing []string
	seconds, late, runs := 0.0, 0, 0
	targets := map[string]bool{}
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, "verdict.json"))
		var r runSummary
		if err == nil {
			err = json.Unmarshal(b, &r)
		}
		if err != nil {
			missing = append(missing, fmt.Sprintf("%s: no verdict (%v)", d, err))
			continue
		}
		runs++
		targets[fmt.Sprintf("%s, %d members", r.Target, r.Nodes)] = true
		seconds += r.Seconds
		late += r.LateRefused
		for k, n := range r.Cycles {
			cycles[k] += n
		}
		for k, n := range r.Refused {
			refused[k] += n
		}
		for w, c := range r.Ops {
			if ops[w] == nil {
				ops[w] = &opc{}
			}
			ops[w].OK += c.OK
			ops[w].Fail += c.Fail
			ops[w].Info += c.Info
		}
		for _, v := range r.Verdicts {
			if checks[v.Checker] == nil {
				checks[v.Checker] = &chk{}
				order = append(order, v.Checker)
			}
			checks[v.Checker].checked += v.Checked
			checks[v.Checker].bad += len(v.Violations)
			for _, msg := range v.Violations {
				violations = append(violations, fmt.Sprintf("VIOLATION %s (%s, seed %d): %s", v.Checker, filepath.Base(d), r.Seed, msg))
			}
			if strings.Contains(v.Note, "gave up") {
				violations = append(violations, fmt.Sprintf("NOTE %s (%s): %s", v.Checker, filepath.Base(d), v.Note))
			}
		}
		if !r.Healthy {
			violations = append(violations, fmt.Sprintf("NOTE %s: not every member serving after the final heal", filepath.Base(d)))
		}
	}
	var ts []string
	for t := range targets {
		ts = append(ts, t)
	}
	sort.Strings(ts)
	fmt.Printf("long run: %s; %d runs, %.0f s of faults\n\n", strings.Join(ts, " + "), runs, seconds)
	var kinds []string
	for k := range cycles {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	fmt.Printf("%-22s | %6s | %s\n", "nemesis", "cycles", "note")
	total := 0
	for _, k := range kinds {
		note := ""
		if refused[k] > 0 {
			note = fmt.Sprintf("member refused to rejoin %d time(s); wiped and restarted", refused[k])
		}
		fmt.Printf("%-22s | %6d | %s\n", k, cycles[k], note)
		total += cycles[k]
	}
	fmt.Printf("%-22s | %6d |\n\n", "total", total)
	var ws []string
	for w := range ops {
		ws = append(ws, w)
	}
	sort.Strings(ws)
	fmt.Printf("%-22s | %8s | %7s | %13s\n", "workload", "ok", "failed", "indeterminate")
	for _, w := range ws {
		fmt.Printf("%-22s | %8d | %7d | %13d\n", w, ops[w].OK, ops[w].Fail, ops[w].Info)
	}
	fmt.Printf("\n%-22s | %8s | %10s | %s\n", "checker", "checked", "violations", "note")
	for _, c := range order {
		note := ""
		if c == "lock-fencing" {
			note = fmt.Sprintf("late writes of paused holders refused: %d", late)
		}
		fmt.Printf("%-22s | %8d | %10d | %s\n", c, checks[c].checked, checks[c].bad, note)
	}
	for _, v := range violations {
		fmt.Println(v)
	}
	for _, m := range missing {
		fmt.Println("MISSING", m)
	}
	bad := len(missing)
	for _, c := range checks {
		bad += c.bad
	}
	if bad > 0 {
		return 1
	}
	return 0
}
