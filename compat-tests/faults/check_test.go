package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// These feed the checkers hand-made histories: each bad one must be caught, each good twin must pass,
// so a run's "0 violations" means the checker looked.

func regOp(client int, f string, v int64, ver int32, outV int64, outVer int32, typ string, call, ret int64) Op {
	return Op{W: "register", Client: client, Key: "/reg/k0", F: f, Value: v, Ver: ver, OutVal: outV, OutVer: outVer, Type: typ, Call: call, Ret: ret}
}

func TestRegisterCatchesStaleRead(t *testing.T) {
	good := []Op{
		regOp(1, "write", 7, -1, 0, 1, "ok", 0, 10),
		regOp(2, "read", 0, 0, 7, 1, "ok", 20, 30),
		regOp(3, "cas", 9, 1, 0, 2, "ok", 40, 50),
		regOp(2, "read", 0, 0, 9, 2, "ok", 60, 70),
	}
	if v := checkRegister(good, 10*time.Second, ""); len(v.Violations) != 0 {
		t.Fatalf("a linearizable history was judged bad: %v", v.Violations)
	}
	// The second read sees the value from before the cas that completed before it began.
	bad := append([]Op(nil), good[:3]...)
	bad = append(bad, regOp(2, "read", 0, 0, 7, 1, "ok", 60, 70))
	if v := checkRegister(bad, 10*time.Second, ""); len(v.Violations) != 1 {
		t.Fatalf("a stale read was not caught: %+v", v)
	}
}

// A long run's register history: 200 generations of keys, each with writes that timed out (open to the
// end) and reads that saw some of them. As one key it would be a search over every subset of 400 open
// writes; key by key it is decided, and the one bad key among them is caught and named.
func TestRegisterJudgesKeyGenerationsOneByOne(t *testing.T) {
	var h []Op
	at := int64(0)
	for g := 0; g < 200; g++ {
		key := regKey(int64(g), 0)
		op := func(client int, f string, v int64, outV int64, outVer int32, typ string) {
			h = append(h, Op{W: "register", Client: client, Key: key, F: f, Value: v, Ver: -1, OutVal: outV, OutVer: outVer, Type: typ, Call: at, Ret: at + 5})
			at += 10
		}
		base := int64(g * 10)
		op(1, "write", base+1, 0, 0, "info")
		op(2, "write", base+2, 0, 0, "info")
		op(3, "read", 0, base+2, 1, "ok") // the second landed first
		if g == 137 {
			op(3, "read", 0, base+1, 1, "ok") // a version 1 twice with two values: impossible
		} else {
			op(3, "read", 0, base+1, 2, "ok")
		}
	}
	v := checkRegister(h, 10*time.Second, "")
	if len(v.Violations) != 1 || !strings.Contains(v.Violations[0], regKey(137, 0)+":") {
		t.Fatalf("want exactly the bad generation 137 caught, got %+v", v)
	}
	if strings.Contains(v.Note, "gave up") || !strings.HasPrefix(v.Note, "200 keys") {
		t.Fatalf("every key should be decided: %q", v.Note)
	}
}

func TestRegisterIndeterminateWriteMayLandLater(t *testing.T) {
	h := []Op{
		regOp(1, "write", 5, -1, 0, 0, "info", 0, 10), // timed out: may have happened, even later
		regOp(2, "read", 0, 0, 0, 0, "ok", 20, 30),
		regOp(2, "read", 0, 0, 5, 1, "ok", 40, 50),
	}
	if v := checkRegister(h, 10*time.Second, ""); len(v.Violations) != 0 {
		t.Fatalf("an indeterminate write taking effect late was judged bad: %v", v.Violations)
	}
	// But a definitely failed cas may not have taken effect.
	h2 := []Op{
		regOp(1, "cas", 5, 0, 0, 0, "fail", 0, 10),
		regOp(2, "read", 0, 0, 5, 1, "ok", 20, 30),
	}
	if v := checkRegister(h2, 10*time.Second, ""); len(v.Violations) != 1 {
		t.Fatalf("a failed cas that took effect was not caught: %+v", v)
	}
}

func TestFencingSeesStaleWritesAndCatchesTokensThatCannotFence(t *testing.T) {
	w := func(client int, seq, tok int64, at int64) Op {
		return Op{W: "lock", F: "write", Client: client, Seq: seq, Czxid: tok, Type: "ok", Call: at, Ret: at}
	}
	// The store accepts every write: the paused holder's late write (node #1, older token) reaches it and
	// is seen as stale, which is what fencing is for, not a violation.
	v, stale := checkFencing([]Op{w(1, 1, 0x100, 1), w(2, 2, 0x200, 2), w(1, 1, 0x100, 3), w(2, 2, 0x200, 4)})
	if len(v.Violations) != 0 || stale != 1 || v.Checked != 4 {
		t.Fatalf("a fenceable history: violations %v, stale %d, checked %d", v.Violations, stale, v.Checked)
	}
	// A later lock node with a lower token: a fencing store would refuse the current holder, and then
	// accept the stale one's next write.
	v, _ = checkFencing([]Op{w(1, 1, 0x300, 1), w(2, 2, 0x200, 2), w(1, 1, 0x300, 3)})
	if len(v.Violations) != 2 || !strings.Contains(v.Violations[0], "refuses the current holder") ||
		!strings.Contains(v.Violations[1], "accepts the stale holder") {
		t.Fatalf("tokens against the lock order were not caught: %+v", v)
	}
	// Two lock nodes with one token, and one node with two tokens.
	v, _ = checkFencing([]Op{w(1, 1, 0x100, 1), w(2, 2, 0x100, 2), w(2, 2, 0x180, 3)})
	if len(v.Violations) != 2 || !strings.Contains(v.Violations[0], "same token") ||
		!strings.Contains(v.Violations[1], "and with token") {
		t.Fatalf("shared or changing tokens were not caught: %+v", v)
	}
}

func TestCheckersThatCheckedNothingFail(t *testing.T) {
	empty, _ := checkFencing(nil)
	vs := requireChecked([]Verdict{empty, checkOrder(nil), {Checker: "x", Checked: 3}})
	for _, v := range vs[:2] {
		if len(v.Violations) != 1 || !strings.Contains(v.Violations[0], "checked nothing") {
			t.Fatalf("%s judged nothing and passed: %+v", v.Checker, v)
		}
	}
	if len(vs[2].Violations) != 0 {
		t.Fatalf("a checker that judged 3 things was failed: %+v", vs[2])
	}
}

func TestEgressCatchesAMemberSendingOffItsNetwork(t *testing.T) {
	if v := checkEgress([]string{"0", "0", "0"}); len(v.Violations) != 0 || v.Checked != 3 {
		t.Fatalf("a clean run: %+v", v)
	}
	v := checkEgress([]string{"0", "17", ""})
	if len(v.Violations) != 2 || !strings.Contains(v.Violations[0], "member 2 sent 17 packets") ||
		!strings.Contains(v.Violations[1], "member 3: its egress count could not be read") {
		t.Fatalf("a member sending off-net, and one unread, were not both caught: %+v", v)
	}
	if v := requireChecked([]Verdict{checkEgress(nil)}); len(v[0].Violations) != 1 {
		t.Fatalf("egress with no members read passed: %+v", v[0])
	}
}

func TestLockExclusiveCatchesTwoHolders(t *testing.T) {
	acq := Op{W: "lock", F: "acquire", Type: "ok", Client: 2, Seq: 2, Pzxid: 0x50, Names: []string{"n-0000000002"}}
	later := Op{W: "lock", F: "monitor", Type: "ok", Client: 9, Pzxid: 0x60, Names: []string{"n-0000000002", "n-0000000003"}}
	if v := checkLockExclusive([]Op{acq, later}); len(v.Violations) != 0 {
		t.Fatalf("one holder at a time was judged bad: %v", v.Violations)
	}
	// A later listing still holds node 1: client 2 took the lock while node 1's owner held it.
	stale := Op{W: "lock", F: "monitor", Type: "ok", Client: 9, Pzxid: 0x60, Names: []string{"n-0000000001", "n-0000000002"}}
	if v := checkLockExclusive([]Op{acq, stale}); len(v.Violations) != 1 {
		t.Fatalf("two holders were not caught: %+v", v)
	}
}

func TestOrderCatchesGoingBackAndLostOwnWrite(t *testing.T) {
	h := []Op{
		{W: "order", F: "set", Key: "/order/own-1-0", Session: 1, Value: 5, Mzxid: 0x10, Type: "ok", Call: 1, Ret: 2},
		{W: "order", F: "get", Key: "/order/own-1-0", Session: 1, OutVal: 5, Mzxid: 0x10, Type: "ok", Call: 3, Ret: 4},
		{W: "order", F: "get", Key: "/order/shared", Session: 1, Mzxid: 0x20, Type: "ok", Call: 5, Ret: 6},
	}
	if v := checkOrder(h); len(v.Violations) != 0 {
		t.Fatalf("a good session was judged bad: %v", v.Violations)
	}
	h = append(h,
		Op{W: "order", F: "get", Key: "/order/shared", Session: 1, Mzxid: 0x18, Type: "ok", Call: 7, Ret: 8},
		Op{W: "order", F: "get", Key: "/order/own-1-0", Session: 1, OutVal: 4, Mzxid: 0x10, Type: "ok", Call: 9, Ret: 10})
	if v := checkOrder(h); len(v.Violations) != 2 {
		t.Fatalf("want 2 violations (zxid back, own write not read), got %+v", v)
	}
}

func TestEphemeralsCatchResurrection(t *testing.T) {
	h := []Op{
		{W: "eph", F: "create", Session: 7, Key: "/eph/s7-0", Type: "ok", Call: 1, Ret: 2},
		{W: "eph", F: "end", Session: 7, Type: "ok", Call: 3, Ret: 4},
		{W: "eph", F: "sweep", Type: "ok", Names: nil, Call: 5, Ret: 6},
		{W: "eph", F: "sweep", Type: "ok", Names: []string{"s7-0"}, Call: 7, Ret: 8},
	}
	if v := checkEphemerals(h, map[string][]string{"n1": {}}); len(v.Violations) != 1 {
		t.Fatalf("an ephemeral that came back was not caught: %+v", v)
	}
	if v := checkEphemerals(h[:3], map[string][]string{"n1": {"s7-0"}}); len(v.Violations) != 1 {
		t.Fatalf("an ephemeral left after healing was not caught: %+v", v)
	}
	if v := checkEphemerals(h[:3], map[string][]string{"n1": {}}); len(v.Violations) != 0 {
		t.Fatalf("a clean history was judged bad: %v", v.Violations)
	}
}

func TestAckCatchesLostWrite(t *testing.T) {
	five, six := int64(5), int64(6)
	h := []Op{
		{W: "ack", F: "create", Key: "/ack/c1-0", Value: 5, Type: "ok", Call: 1, Ret: 2},
		{W: "ack", F: "set", Key: "/ack/c1-0", Value: 6, Type: "ok", Call: 3, Ret: 4},
	}
	if v := checkAck(h, map[string]map[string]*int64{"n1": {"/ack/c1-0": &six}}); len(v.Violations) != 0 {
		t.Fatalf("%v", v.Violations)
	}
	v := checkAck(h, map[string]map[string]*int64{"n1": {"/ack/c1-0": &six}, "n2": {"/ack/c1-0": &five}, "n3": {}})
	if len(v.Violations) != 2 {
		t.Fatalf("want a lost set and a lost create, got %+v", v)
	}
}

func TestTreesAndUniqueAndWatches(t *testing.T) {
	a := map[string]NodeInfo{"/x": {Data: "1", Czxid: 1}, "/w/k0": {Czxid: 5}, "/w/k1": {Czxid: 6}}
	b := map[string]NodeInfo{"/x": {Data: "2", Czxid: 1}, "/w/k0": {Czxid: 5}, "/w/k1": {Czxid: 6}}
	if v := checkTrees(map[string]map[string]NodeInfo{"n1": a, "n2": a}); len(v.Violations) != 0 {
		t.Fatalf("%v", v.Violations)
	}
	if v := checkTrees(map[string]map[string]NodeInfo{"n1": a, "n2": b}); len(v.Violations) != 1 {
		t.Fatalf("differing trees not caught: %+v", v)
	}
	ids := []Op{{W: "ids", Type: "ok", Key: "/ids/id-1", Czxid: 3}, {W: "ids", Type: "ok", Key: "/ids/id-1", Czxid: 4}}
	if v := checkUnique(ids, a); len(v.Violations) != 1 {
		t.Fatalf("a duplicate sequential name was not caught: %+v", v)
	}
	reg := func(p string) Op { return Op{W: "watch", F: "register", Type: "ok", Session: 1, Key: p} }
	ev := func(p string, at int64) Op {
		return Op{W: "watch", F: "event", Type: "ok", Session: 1, Key: p, Ret: at}
	}
	end := Op{W: "watch", F: "round-end", Type: "ok", Session: 1}
	good := []Op{reg("/w/k0"), reg("/w/k1"), ev("/w/k0", 1), ev("/w/k1", 2), end}
	if v := checkWatches(good, a); len(v.Violations) != 0 {
		t.Fatalf("%v", v.Violations)
	}
	bad := []Op{reg("/w/k0"), reg("/w/k1"), ev("/w/k1", 1), ev("/w/k0", 2), ev("/w/k0", 3), end}
	if v := checkWatches(bad, a); len(v.Violations) != 2 {
		t.Fatalf("want out-of-order and fired-twice, got %+v", v)
	}
	if v := checkWatches([]Op{reg("/w/k0"), reg("/w/k1"), ev("/w/k0", 1), end}, a); len(v.Violations) != 1 {
		t.Fatalf("a lost watch event was not caught: %+v", v)
	}
}

// The long run's table adds segments up, names the segment of each violation, and fails on a segment
// without a verdict.
func TestSummarizeAddsUpRunsAndNamesTheirViolations(t *testing.T) {
	write := func(name string, r runSummary) string {
		d := filepath.Join(t.TempDir(), name)
		os.MkdirAll(d, 0o755)
		b, _ := json.Marshal(r)
		os.WriteFile(filepath.Join(d, "verdict.json"), b, 0o644)
		return d
	}
	clean := write("seg-1-s1001", runSummary{Target: "paddock", Nodes: 3, Seed: 1001, Healthy: true,
		Cycles: map[string]int{"kill-one": 2, "disk-torn-write": 1}, Ops: map[string]*opCounts{"ack": {OK: 5}},
		Outcomes: map[string]map[string]int{"disk-torn-write": {"power cut, torn tail dropped, rejoined": 1}},
		Verdicts: []Verdict{{Checker: "acknowledged-writes", Checked: 5}}})
	bad := write("seg-2-s1002", runSummary{Target: "paddock", Nodes: 3, Seed: 1002, Healthy: true,
		Cycles: map[string]int{"kill-one": 1, "lossy": 1, "disk-torn-write": 1}, Ops: map[string]*opCounts{"ack": {OK: 3, Info: 1}},
		Outcomes: map[string]map[string]int{"disk-torn-write": {"power cut, torn tail dropped, rejoined": 1}},
		Verdicts: []Verdict{{Checker: "acknowledged-writes", Checked: 3, Violations: []string{"/ack/x missing on n2"}}}})
	tab := newTable()
	for _, d := range []string{clean, bad} {
		var r runSummary
		b, _ := os.ReadFile(filepath.Join(d, "verdict.json"))
		json.Unmarshal(b, &r)
		tab.addRun(r.Cycles, r.Refused, r.Outcomes, r.Ops, r.Verdicts, r.LateRefused, filepath.Base(d))
	}
	var out strings.Builder
	tab.write(&out)
	for _, want := range []string{"kill-one               |      3 |", "total                  |      6 |",
		"disk-torn-write        |      2 | 2 x power cut, torn tail dropped, rejoined",
		"ack                    |        8 |       0 |             1", "acknowledged-writes    |        8 |          1 |",
		"VIOLATION acknowledged-writes: (seg-2-s1002) /ack/x missing on n2"} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("the summary lacks %q:\n%s", want, out.String())
		}
	}
	if summarize([]string{clean}) != 0 || summarize([]string{clean, bad}) != 1 || summarize([]string{clean, t.TempDir()}) != 1 {
		t.Fatal("summarize's exit status: 0 only when every run has a verdict without violations")
	}
}
