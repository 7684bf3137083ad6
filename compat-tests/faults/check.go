package main

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
)

// Each checker takes the recorded ops (and, where it needs them, what the members held after healing)
// and returns the violations it found; none of them trusts the driver's own bookkeeping beyond what the
// servers answered.

type Verdict struct {
	Checker    string   `json:"checker"`
	Checked    int      `json:"checked"` // how many things it judged (ops, nodes, holds, events)
	Violations []string `json:"violations"`
	Note       string   `json:"note,omitempty"`
}

func (v *Verdict) bad(format string, args ...interface{}) {
	if len(v.Violations) < 50 {
		v.Violations = append(v.Violations, fmt.Sprintf(format, args...))
	} else if len(v.Violations) == 50 {
		v.Violations = append(v.Violations, "... (more left off)")
	}
}

// ---- register: linearizability with Porcupine ----

type regState struct {
	V   int64
	Ver int32
}

type regIn struct {
	F   string
	V   int64
	Ver int32 // cas: expected version
}

type regOut struct {
	Known bool // false for an info op: the outcome is unknown
	OK    bool
	V     int64
	Ver   int32
}

// registerModel: each key is a znode holding an integer, with its data version. read returns both;
// write is setData with version -1 (the new version is the old one plus one); cas is setData with an
// expected version, ok iff the version matched. An info op may have happened or not: Porcupine may
// place it anywhere after its call (its return is +inf), so the model lets it take effect when it can.
var registerModel = porcupine.Model{
	Partition: func(h []porcupine.Operation) [][]porcupine.Operation {
		by := map[string][]porcupine.Operation{}
		var keys []string
		for _, op := range h {
			k := op.Metadata.(string)
			if _, ok := by[k]; !ok {
				keys = append(keys, k)
			}
			by[k] = append(by[k], op)
		}
		sort.Strings(keys)
		var out [][]porcupine.Operation
		for _, k := range keys {
			out = append(out, by[k])
		}
		return out
	},
	Init: func() interface{} { return regState{0, 0} },
	Step: func(s, in, out interface{}) (bool, interface{}) {
		st, i, o := s.(regState), in.(regIn), out.(regOut)
		switch i.F {
		case "read":
			return o.V == st.V && o.Ver == st.Ver, st
		case "write":
			if o.Known && o.Ver != st.Ver+1 {
				return false, st
			}
			return true, regState{i.V, st.Ver + 1}
		case "cas":
			if !o.Known {
				if st.Ver == i.Ver {
					return true, regState{i.V, st.Ver + 1}
				}
				return true, st
			}
			if o.OK {
				return st.Ver == i.Ver, regState{i.V, st.Ver + 1}
			}
			return st.Ver != i.Ver, st
		}
		return false, st
	},
	DescribeOperation: func(in, out interface{}) string {
		i, o := in.(regIn), out.(regOut)
		switch {
		case i.F == "read":
			return fmt.Sprintf("read -> %d@v%d", o.V, o.Ver)
		case !o.Known:
			return fmt.Sprintf("%s(%d, v%d) -> ?", i.F, i.V, i.Ver)
		case i.F == "write":
			return fmt.Sprintf("write(%d) -> v%d", i.V, o.Ver)
		default:
			return fmt.Sprintf("cas(v%d -> %d) -> %v", i.Ver, i.V, o.OK)
		}
	},
}

// registerOps turns the register workload's ops into Porcupine operations. Info reads say nothing and
// are dropped; failed writes never happened and are dropped; info writes return at +inf.
func registerOps(ops []Op) []porcupine.Operation {
	var out []porcupine.Operation
	for _, op := range ops {
		if op.W != "register" {
			continue
		}
		in := regIn{F: op.F, V: op.Value, Ver: op.Ver}
		o := regOut{Known: op.Type != "info", OK: op.Type == "ok", V: op.OutVal, Ver: op.OutVer}
		ret := op.Ret
		switch {
		case op.Type == "info" && op.F == "read":
			continue
		case op.Type == "fail" && op.F == "write":
			continue
		case op.Type == "fail" && op.F == "read":
			continue
		case op.Type == "info":
			ret = math.MaxInt64
		}
		out = append(out, porcupine.Operation{ClientId: op.Client, Input: in, Call: op.Call, Output: o, Return: ret, Metadata: op.Key})
	}
	return out
}

// checkRegister judges each key's history on its own (the model's partitions, one Porcupine search
// each, one after the other), so that memory is bounded by the largest key's search, not by the run.
// A key whose search takes longer than perKey is undecided: said in the note, not counted as a
// violation.
func checkRegister(ops []Op, perKey time.Duration, vizPath string) Verdict {
	v := Verdict{Checker: "register-linearizable"}
	pops := registerOps(ops)
	v.Checked = len(pops)
	parts := registerModel.Partition(pops)
	var undecided []string
	drawn := false
	for _, part := range parts {
		key := part[0].Metadata.(string)
		switch porcupine.CheckOperationsTimeout(registerModel, part, perKey) {
		case porcupine.Illegal:
			v.bad("%s: its history (%d ops) is not linearizable (Porcupine); see %s", key, len(part), vizPath)
			// The verbose check keeps every partial linearization: only for a bad key, to draw it.
			if vizPath != "" && !drawn {
				drawn = true
				if _, info := porcupine.CheckOperationsVerbose(registerModel, part, perKey); true {
					_ = porcupine.VisualizePath(registerModel, info, vizPath)
				}
			}
		case porcupine.Unknown:
			undecided = append(undecided, key)
		}
	}
	v.Note = fmt.Sprintf("%d keys", len(parts))
	if len(undecided) > 0 {
		v.Note += fmt.Sprintf("; Porcupine gave up after %s on %d (undecided, not counted): %s", perKey, len(undecided), strings.Join(undecided, " "))
	}
	return v
}

// ---- per-session order: mzxids never go backwards within a session; a session reads its own writes ----

func checkOrder(ops []Op) Verdict {
	v := Verdict{Checker: "session-order"}
	type key struct {
		s int64
		k string
	}
	maxZ := map[key]int64{}
	own := map[key]Op{} // the last acknowledged write of the session's own key
	sorted := append([]Op(nil), ops...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Call < sorted[j].Call })
	for _, op := range sorted {
		if op.W != "order" || op.Type != "ok" {
			continue
		}
		v.Checked++
		k := key{op.Session, op.Key}
		if op.Mzxid < maxZ[k] {
			v.bad("session %#x: %s of %s saw mzxid %#x after having seen %#x", op.Session, op.F, op.Key, op.Mzxid, maxZ[k])
		}
		if op.Mzxid > maxZ[k] {
			maxZ[k] = op.Mzxid
		}
		if strings.Contains(op.Key, "/own-") {
			if op.F == "set" {
				own[k] = op
			} else if w, ok := own[k]; ok && op.Call > w.Ret && op.OutVal != w.Value {
				v.bad("session %#x: read %d from %s after its own write of %d (mzxid %#x) was acknowledged", op.Session, op.OutVal, op.Key, w.Value, w.Mzxid)
			}
		}
	}
	return v
}

// ---- lock with fencing ----

// checkFencing judges the store's log. The store accepts every write (it fences nothing itself), so a
// stale holder's write reaches the log and is seen here instead of being refused out of sight. Each
// write carries its lock node's sequence number and its token (the node's czxid); in arrival order:
//   - a write whose token is below the highest token already written is stale: a fencing store refuses
//     it. That is the client-pause nemesis at work, counted (the second result), not a violation, as long
//     as its lock node is older too;
//   - a violation is a token that does not tell a stale holder from the current one: a write from an
//     older lock node with a token no lower than a newer node's, a newer node with a token no higher, or
//     two tokens for one node. A fencing store would then accept a stale write, or refuse a current one.
func checkFencing(ops []Op) (Verdict, int) {
	v := Verdict{Checker: "lock-fencing"}
	var writes []Op
	for _, op := range ops {
		if op.W == "lock" && op.F == "write" {
			writes = append(writes, op)
		}
	}
	sort.SliceStable(writes, func(i, j int) bool { return writes[i].Call < writes[j].Call })
	var maxTok, maxSeq int64 = -1, -1
	tokenOf := map[int64]int64{} // lock node (sequence number) -> its token
	stale := 0
	for _, w := range writes {
		v.Checked++
		if t, ok := tokenOf[w.Seq]; ok && t != w.Czxid {
			v.bad("lock node #%d wrote with token %#x and with token %#x", w.Seq, t, w.Czxid)
		}
		tokenOf[w.Seq] = w.Czxid
		switch {
		case w.Czxid < maxTok && w.Seq < maxSeq:
			stale++ // an older holder, and its token says so
		case w.Seq < maxSeq:
			v.bad("a write from lock node #%d (token %#x, client %d) came after one from lock node #%d with no higher token (%#x): a fencing store accepts the stale holder", w.Seq, w.Czxid, w.Client, maxSeq, maxTok)
		case w.Czxid < maxTok:
			v.bad("lock node #%d (client %d) wrote with token %#x below %#x of an older lock node: a fencing store refuses the current holder", w.Seq, w.Client, w.Czxid, maxTok)
		case w.Seq > maxSeq && w.Czxid == maxTok:
			v.bad("lock node #%d (client %d) has the same token %#x as lock node #%d", w.Seq, w.Client, w.Czxid, maxSeq)
		}
		if w.Czxid > maxTok {
			maxTok = w.Czxid
		}
		if w.Seq > maxSeq {
			maxSeq = w.Seq
		}
	}
	if stale > 0 {
		v.Note = fmt.Sprintf("%d stale writes reached the store, each with an older token (a fencing store refuses them)", stale)
	}
	return v, stale
}

// checkLockExclusive judges holders from the server's view: a client holds the lock from the children
// listing (at pzxid P) in which its node was the lowest. A correct server never shows, at any later
// pzxid, a node with a lower sequence number (it was deleted, by release or session end, at or before
// P). The monitor's listings and every acquirer's listing are states of /lock at their pzxid.
func checkLockExclusive(ops []Op) Verdict {
	v := Verdict{Checker: "lock-exclusive"}
	type listing struct {
		pz   int64
		seqs []int64
		who  string
	}
	var ls []listing
	var acq []Op
	for _, op := range ops {
		if op.W != "lock" || op.Type != "ok" {
			continue
		}
		if op.F == "monitor" || op.F == "acquire" {
			var seqs []int64
			for _, n := range op.Names {
				if s, ok := seqOf(n); ok {
					seqs = append(seqs, s)
				}
			}
			ls = append(ls, listing{op.Pzxid, seqs, fmt.Sprintf("%s by client %d", op.F, op.Client)})
		}
		if op.F == "acquire" {
			acq = append(acq, op)
		}
	}
	// The lowest node of every listing at a pzxid above P, for each P: sorted by pzxid, suffix minima, so
	// that a long run's thousands of acquisitions and listings are judged in O(n log n).
	sort.Slice(ls, func(i, j int) bool { return ls[i].pz < ls[j].pz })
	low := make([]int64, len(ls)+1)
	low[len(ls)] = math.MaxInt64
	for i := len(ls) - 1; i >= 0; i-- {
		low[i] = low[i+1]
		for _, s := range ls[i].seqs {
			if s < low[i] {
				low[i] = s
			}
		}
	}
	for _, a := range acq {
		v.Checked++
		from := sort.Search(len(ls), func(i int) bool { return ls[i].pz > a.Pzxid })
		if low[from] >= a.Seq {
			continue
		}
		for _, l := range ls[from:] {
			for _, s := range l.seqs {
				if s < a.Seq {
					v.bad("client %d acquired with node #%d at pzxid %#x, but a listing at pzxid %#x (%s) still has node #%d: two holders", a.Client, a.Seq, a.Pzxid, l.pz, l.who, s)
				}
			}
		}
	}
	return v
}

func seqOf(name string) (int64, bool) {
	if len(name) < 10 {
		return 0, false
	}
	var s int64
	for _, c := range name[len(name)-10:] {
		if c < '0' || c > '9' {
			return 0, false
		}
		s = s*10 + int64(c-'0')
	}
	return s, true
}

// ---- unique ids ----

// checkUnique: sequential names and czxids are never handed out twice, in the ids workload's creates and
// across the whole final tree (every znode's czxid is its own creation's zxid).
func checkUnique(ops []Op, tree map[string]NodeInfo) Verdict {
	v := Verdict{Checker: "unique-ids"}
	names := map[string]int{}
	czx := map[int64]string{}
	for _, op := range ops {
		if op.W != "ids" || op.Type != "ok" {
			continue
		}
		v.Checked++
		if c, dup := names[op.Key]; dup {
			v.bad("sequential name %s handed out twice (clients %d and %d)", op.Key, c, op.Client)
		}
		names[op.Key] = op.Client
		if op.Czxid != 0 {
			if p, dup := czx[op.Czxid]; dup && p != op.Key {
				v.bad("czxid %#x given to %s and %s", op.Czxid, p, op.Key)
			}
			czx[op.Czxid] = op.Key
		}
	}
	seen := map[int64]string{}
	for p, n := range tree {
		if p2, dup := seen[n.Czxid]; dup && n.Czxid != 0 {
			v.bad("final tree: %s and %s share czxid %#x", p, p2, n.Czxid)
		}
		seen[n.Czxid] = p
	}
	return v
}

// ---- ephemerals ----

// checkEphemerals: after a session ended (Close returned, or the client was told it expired), a listing
// of /eph that shows the session's node absent must never be followed by one that shows it present, and
// after healing no member may hold it.
func checkEphemerals(ops []Op, final map[string][]string) Verdict {
	v := Verdict{Checker: "ephemerals"}
	ended := map[int64]int64{}
	created := map[string]int64{}
	var sweeps []Op
	for _, op := range ops {
		if op.W != "eph" {
			continue
		}
		switch {
		case op.F == "end":
			ended[op.Session] = op.Ret
		case op.F == "create" && op.Type != "fail":
			created[op.Key] = op.Session
		case op.F == "sweep" && op.Type == "ok":
			sweeps = append(sweeps, op)
		}
	}
	sort.SliceStable(sweeps, func(i, j int) bool { return sweeps[i].Call < sweeps[j].Call })
	// Which sweeps show each node (ascending): a sweep lists the few nodes alive, so this stays small,
	// and each ended session's node is judged by a search instead of a pass over every sweep.
	shownIn := map[string][]int{}
	for i, sw := range sweeps {
		for _, n := range sw.Names {
			shownIn["/eph/"+n] = append(shownIn["/eph/"+n], i)
		}
	}
	for _, path := range sortedKeys(created) {
		sess := created[path]
		end, ok := ended[sess]
		if !ok {
			continue
		}
		first := sort.Search(len(sweeps), func(i int) bool { return sweeps[i].Call >= end })
		if first == len(sweeps) {
			continue
		}
		v.Checked++
		// The first sweep after the end that does not show it; any later sweep that does is a comeback.
		shown := shownIn[path]
		j := sort.SearchInts(shown, first)
		gone := first
		for j < len(shown) && shown[j] == gone {
			gone++
			j++
		}
		for ; j < len(shown); j++ {
			v.bad("%s (session %#x, ended) came back on %s after it was seen gone", path, sess, sweeps[shown[j]].Server)
		}
	}
	for member, names := range final {
		for _, n := range names {
			path := "/eph/" + n
			v.Checked++
			if sess, ok := created[path]; ok {
				v.bad("after healing, %s still has %s (session %#x, ended)", member, path, sess)
			} else {
				v.bad("after healing, %s has %s, which no session of this run acknowledged creating... or left open", member, path)
			}
		}
	}
	return v
}

// ---- acknowledged writes ----

// checkAck: every acknowledged create is on every member, holding the last acknowledged value or the
// value of a later indeterminate set.
func checkAck(ops []Op, reads map[string]map[string]*int64) Verdict {
	v := Verdict{Checker: "acknowledged-writes"}
	type node struct {
		created bool
		allowed map[int64]bool
	}
	nodes := map[string]*node{}
	sorted := append([]Op(nil), ops...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Call < sorted[j].Call })
	for _, op := range sorted {
		if op.W != "ack" {
			continue
		}
		n := nodes[op.Key]
		if n == nil {
			n = &node{allowed: map[int64]bool{}}
			nodes[op.Key] = n
		}
		switch op.Type {
		case "ok":
			n.created = true
			n.allowed = map[int64]bool{op.Value: true}
		case "info":
			n.allowed[op.Value] = true
		}
	}
	members := sortedKeys(reads)
	for path, n := range nodes {
		if !n.created {
			continue
		}
		for _, m := range members {
			v.Checked++
			got := reads[m][path]
			if got == nil {
				v.bad("acknowledged %s is missing on %s", path, m)
			} else if !n.allowed[*got] {
				v.bad("%s on %s holds %d; acknowledged/possible values %v", path, m, *got, keys(n.allowed))
			}
		}
	}
	return v
}

func keys(m map[int64]bool) []int64 {
	var out []int64
	for k := range m {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// ---- tree digests ----

type NodeInfo struct {
	Data           string
	Czxid, Mzxid   int64
	Version        int32
	EphemeralOwner int64
	NumChildren    int32
}

// checkTrees: every member's whole tree (outside /zookeeper) is identical, data and stat.
func checkTrees(dumps map[string]map[string]NodeInfo) Verdict {
	v := Verdict{Checker: "tree-digest"}
	members := sortedKeys(dumps)
	if len(members) < 2 {
		return v
	}
	ref := dumps[members[0]]
	for _, m := range members[1:] {
		v.Checked++
		d := dumps[m]
		diffs := 0
		for p, a := range ref {
			if b, ok := d[p]; !ok {
				diffs++
				if diffs <= 5 {
					v.bad("%s has %s, %s does not", members[0], p, m)
				}
			} else if a != b {
				diffs++
				if diffs <= 5 {
					v.bad("%s differs: %s has %+v, %s has %+v", p, members[0], a, m, b)
				}
			}
		}
		for p := range d {
			if _, ok := ref[p]; !ok {
				diffs++
				if diffs <= 5 {
					v.bad("%s has %s, %s does not", m, p, members[0])
				}
			}
		}
	}
	return v
}

// ---- watches ----

// checkWatches: per watcher session and round, the NodeCreated events arrive in the order of the
// nodes' czxids (read from the final tree), each registered watch fires at most once, and if the session
// lived through the round every node that was created got its event.
func checkWatches(ops []Op, tree map[string]NodeInfo) Verdict {
	v := Verdict{Checker: "watches"}
	type rk struct {
		s     int64
		round int64
	}
	regs := map[rk]map[string]bool{}
	evs := map[rk][]Op{}
	lived := map[rk]bool{}
	for _, op := range ops {
		if op.W != "watch" {
			continue
		}
		k := rk{op.Session, op.Seq}
		switch op.F {
		case "register":
			if op.Type == "ok" {
				if regs[k] == nil {
					regs[k] = map[string]bool{}
				}
				regs[k][op.Key] = true
			}
		case "event":
			evs[k] = append(evs[k], op)
		case "round-end":
			lived[k] = op.Type == "ok"
		}
	}
	for k, reg := range regs {
		v.Checked++
		fired := map[string]int{}
		var last, before int64 // the highest czxid seen in this connection, and in earlier ones
		lastPath := ""
		epoch := int32(0)
		list := evs[k]
		sort.SliceStable(list, func(i, j int) bool { return list[i].Ret < list[j].Ret })
		for _, e := range list {
			// After a reconnect the client re-sends its watches (SetWatches) and the server fires, in no
			// particular order, those whose nodes changed meanwhile: within such a connection only "all
			// after everything delivered before the reconnect" is promised.
			if e.Ver != epoch {
				epoch, before = e.Ver, last
			}
			fired[e.Key]++
			if fired[e.Key] == 2 {
				v.bad("session %#x round %d: watch on %s fired twice", k.s, k.round, e.Key)
			}
			if fired[e.Key] > 1 {
				continue
			}
			if !reg[e.Key] {
				v.bad("session %#x round %d: event for %s, which it never watched", k.s, k.round, e.Key)
			}
			n, ok := tree[e.Key]
			if !ok {
				continue // created then lost? the ack checker speaks to that
			}
			if n.Czxid < before {
				v.bad("session %#x round %d: event for %s (czxid %#x) after a reconnect, but an event before it had czxid %#x", k.s, k.round, e.Key, n.Czxid, before)
			}
			if epoch == 0 && n.Czxid < last {
				v.bad("session %#x round %d: event for %s (czxid %#x) after %s (czxid %#x): out of zxid order", k.s, k.round, e.Key, n.Czxid, lastPath, last)
			}
			if n.Czxid > last {
				last, lastPath = n.Czxid, e.Key
			}
		}
		if lived[k] {
			for p := range reg {
				if _, exists := tree[p]; exists && fired[p] == 0 {
					v.bad("session %#x round %d: %s was created while the session lived, its watch never fired", k.s, k.round, p)
				}
			}
		}
	}
	return v
}

// requireChecked: a checker that judged nothing passed vacuously, which a run must not count as a pass
// (a workload that did not run, a history that did not reach the checker). Each such verdict gets a
// violation saying so.
func requireChecked(verdicts []Verdict) []Verdict {
	for i := range verdicts {
		if verdicts[i].Checked == 0 && len(verdicts[i].Violations) == 0 {
			verdicts[i].bad("checked nothing: the run gave this checker nothing to judge")
		}
	}
	return verdicts
}

// checkEgress: each member's count of packets it tried to send off the members' /24 (the egress
// nemesis's firewall counts and drops them); "0" is the only clean answer, and a member whose count
// could not be read is a violation too (nothing was checked for it).
func checkEgress(counts []string) Verdict {
	v := Verdict{Checker: "egress"}
	for i, out := range counts {
		switch {
		case out == "0":
			v.Checked++
		case out == "":
			v.bad("member %d: its egress count could not be read", i+1)
		default:
			v.Checked++
			v.bad("member %d sent %s packets off %s.0/24 (dropped)", i+1, out, memberNet)
		}
	}
	return v
}
