// Command faults drives the fault suite (compat-tests/faults/run.sh sets up the hosts and calls it):
// workloads on go-zookeeper clients against the members at 10.77.S.1..N:2181 (S: run.sh's slot), a seeded nemesis
// schedule through hosts.sh, and after healing the checkers. `faults locker` is one lock client process; `faults summarize DIR...` adds up runs' verdicts.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
)

var allWorkloads = []string{"register", "order", "lock", "ids", "eph", "ack", "watch"}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "locker" {
		runLocker(os.Args[2:])
		return
	}
	if len(os.Args) > 1 && os.Args[1] == "summarize" {
		os.Exit(summarize(os.Args[2:]))
	}
	os.Exit(run())
}

func run() int {
	nodes := flag.Int("nodes", 3, "members at NET.1..N")
	netPrefix := flag.String("net", "10.77.0", "the members' /24 (run.sh's slot): members at NET.1..N")
	dur := flag.Duration("time", 120*time.Second, "how long the workloads and the nemesis run")
	nemList := flag.String("nemesis", "all", "nemesis kinds or groups, comma-separated, or all/none")
	wlList := flag.String("workload", "all", "workloads, comma-separated, or all")
	seed := flag.Int64("seed", 1, "seed of the nemesis schedule and the workloads' choices")
	runDir := flag.String("dir", ".", "the run folder")
	hosts := flag.String("hosts", "", "hosts.sh")
	target := flag.String("target", "zookeeper", "only for the verdict")
	sessionTimeout := flag.Duration("session-timeout", 4*time.Second, "clients' session timeout")
	hold := flag.Duration("hold", 4*time.Second, "how long a fault lasts (pauses have their own lengths)")
	quiet := flag.Duration("quiet", 3*time.Second, "healthy time between faults")
	perKind := flag.Bool("each", false, "go through every nemesis kind in turn (shuffled per pass) instead of drawing each cycle at random")
	keyPeriod := flag.Duration("key-period", 10*time.Second, "the register workload moves to fresh keys this often")
	skipClock := flag.Bool("no-clock", false, "the members do not run under libfaketime: drop the clock nemeses")
	quorum := flag.String("quorum", "plaintext", "how the members talk to each other (TLS or plaintext), only for the table")
	shim := flag.Bool("shim", false, "the members run under the power-loss shim (hosts.sh FAULTS_SHIM): else the disk-lose-unsynced, disk-torn-write and disk-eio nemeses are dropped")
	ownDisk := flag.Bool("disk", false, "each member's data dir is a file system of its own (hosts.sh FAULTS_DISK_MB): else disk-full is dropped")
	flag.Parse()
	memberNet = *netPrefix

	kinds, err := expandNemeses(*nemList)
	if err != nil {
		fmt.Fprintln(os.Stderr, "faults:", err)
		return 2
	}
	if *skipClock {
		var k2 []string
		for _, k := range kinds {
			if !strings.HasPrefix(k, "clock-") {
				k2 = append(k2, k)
			}
		}
		kinds = k2
	}
	{
		var k2 []string
		for _, k := range kinds {
			if (needsShim[k] && !*shim) || (needsDisk[k] && !*ownDisk) {
				fmt.Fprintf(os.Stderr, "faults: nemesis %s left out: the members run without the shim or disks of their own\n", k)
				continue
			}
			k2 = append(k2, k)
		}
		kinds = k2
	}
	wls := map[string]bool{}
	for _, w := range strings.Split(*wlList, ",") {
		switch w = strings.TrimSpace(w); {
		case w == "all":
			for _, a := range allWorkloads {
				wls[a] = true
			}
		case contains(allWorkloads, w):
			wls[w] = true
		default:
			fmt.Fprintf(os.Stderr, "faults: unknown workload %q (known: %s)\n", w, strings.Join(allWorkloads, ", "))
			return 2
		}
	}
	if !wls["lock"] {
		var k2 []string
		for _, k := range kinds {
			if k != "client-pause" {
				k2 = append(k2, k)
			}
		}
		kinds = k2
	}

	f, _ := os.Create(filepath.Join(*runDir, "clients.log"))
	SetClientLog(f)
	h, err := NewHistory(filepath.Join(*runDir, "history.jsonl"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "faults:", err)
		return 2
	}
	var servers []string
	for i := 1; i <= *nodes; i++ {
		servers = append(servers, memberAddr(i))
	}
	env := &Env{Servers: servers, SessionTimeout: *sessionTimeout, OpTimeout: 3 * time.Second, H: h, Seed: *seed, RunDir: *runDir}
	nem, err := NewNemesis(*hosts, *nodes, *seed, filepath.Join(*runDir, "timeline.jsonl"), *sessionTimeout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "faults:", err)
		return 2
	}
	nem.Target, nem.Dir, nem.Disk = *target, *runDir, *ownDisk
	if !nem.WaitHealthy(90 * time.Second) {
		fmt.Fprintln(os.Stderr, "faults: the ensemble did not come up (every member serving, one leader) within 90 s")
		return 3
	}
	keys := 3
	if err := env.Setup(keys); err != nil {
		fmt.Fprintln(os.Stderr, "faults:", err)
		return 3
	}

	ctx, cancel := context.WithCancel(context.Background())
	var wg, lockWG sync.WaitGroup
	if wls["register"] {
		env.Register(ctx, &wg, 5, keys, *keyPeriod)
	}
	if wls["order"] {
		env.Order(ctx, &wg, 3)
	}
	if wls["ids"] {
		env.IDs(ctx, &wg, 3)
	}
	if wls["ack"] {
		env.Ack(ctx, &wg, 3)
	}
	if wls["eph"] {
		env.Eph(ctx, &wg, 3)
	}
	if wls["watch"] {
		env.Watch(ctx, &wg, 8)
	}
	lockCtx, lockCancel := context.WithCancel(context.Background())
	if wls["lock"] {
		self, _ := os.Executable()
		st, err := env.Lock(lockCtx, &lockWG, 3, self)
		if err != nil {
			fmt.Fprintln(os.Stderr, "faults: lock workload:", err)
			cancel()
			lockCancel()
			return 3
		}
		nem.store = st
	}

	// The nemesis schedule: a seeded draw per cycle (or every kind in turn with --each).
	start := time.Now()
	time.Sleep(*quiet)
	var queue []string
	// With --each, the first pass goes through every kind even if it outlasts --time.
	ran := 0
	for len(kinds) > 0 && (time.Since(start) < *dur || (*perKind && ran < len(kinds))) {
		ran++
		var kind string
		if *perKind {
			if len(queue) == 0 {
				queue = append([]string(nil), kinds...)
				nem.rng.Shuffle(len(queue), func(i, j int) { queue[i], queue[j] = queue[j], queue[i] })
			}
			kind, queue = queue[0], queue[1:]
		} else {
			kind = kinds[nem.rng.Intn(len(kinds))]
		}
		h := *hold + time.Duration(nem.rng.Int63n(int64(*hold)/2+1))
		nem.Run(kind, h)
		if !nem.WaitHealthy(60 * time.Second) {
			nem.log("heal", "note", "not every member serving 60 s after the heal; healing everything again")
			nem.HealAll()
			nem.WaitHealthy(60 * time.Second)
		}
		time.Sleep(*quiet)
	}
	for time.Since(start) < *dur {
		time.Sleep(200 * time.Millisecond)
	}
	nem.HealAll()
	nem.log("end", "note", "workloads stop")
	cancel()
	lockCancel()
	waitTimeout(&wg, 30*time.Second)
	waitTimeout(&lockWG, 30*time.Second)
	healthy := nem.WaitHealthy(120 * time.Second)
	nem.log("end", "note", "all members serving: %v", healthy)
	// Sessions that were not closed (a retired client's Close may not have reached a server) expire now.
	time.Sleep(*sessionTimeout + 2*time.Second)

	var verdicts []Verdict
	final := readMembers(*nodes)
	verdicts = append(verdicts, checkTrees(final.trees))
	ref := final.trees[fmt.Sprintf("n%d", 1)]
	for _, t := range final.trees {
		if len(t) > len(ref) {
			ref = t
		}
	}
	all := h.Ops("")
	if wls["register"] {
		verdicts = append(verdicts, checkRegister(all, 60*time.Second, filepath.Join(*runDir, "register-violation.html")))
	}
	if wls["order"] {
		verdicts = append(verdicts, checkOrder(all))
	}
	lateRefused := 0
	if wls["lock"] {
		fv, late := checkFencing(all)
		lateRefused = late
		verdicts = append(verdicts, fv, checkLockExclusive(all))
	}
	if wls["ids"] {
		verdicts = append(verdicts, checkUnique(all, ref))
	}
	if wls["eph"] {
		verdicts = append(verdicts, checkEphemerals(all, final.eph))
	}
	if wls["ack"] {
		verdicts = append(verdicts, checkAck(all, final.ack))
	}
	if wls["watch"] {
		verdicts = append(verdicts, checkWatches(all, ref))
	}
	var egress []string
	for i := 1; i <= *nodes; i++ {
		out, _ := nem.sh("egress", strconv.Itoa(i))
		egress = append(egress, strings.TrimSpace(out))
	}
	verdicts = append(verdicts, checkEgress(egress))
	for _, k := range kinds {
		if strings.HasPrefix(k, "disk-") {
			verdicts = append(verdicts, nem.checkDisk())
			break
		}
	}
	if len(final.errs) > 0 {
		verdicts = append(verdicts, Verdict{Checker: "final-read", Checked: *nodes, Violations: final.errs})
	}
	h.Close()
	verdicts = requireChecked(verdicts)
	return report(*runDir, *target, *quorum, *nodes, *seed, *dur, nem, all, verdicts, lateRefused, healthy)
}

// memberNet is the members' /24 (10.77.S for run.sh's slot S); member i is memberNet.i, clients on 2181.
var memberNet = "10.77.0"

func memberAddr(i int) string { return fmt.Sprintf("%s.%d:2181", memberNet, i) }

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if x == y {
			return true
		}
	}
	return false
}

func waitTimeout(wg *sync.WaitGroup, d time.Duration) {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(d):
	}
}

type finalState struct {
	trees map[string]map[string]NodeInfo
	eph   map[string][]string
	ack   map[string]map[string]*int64
	errs  []string
}

// readMembers connects to each member alone and, after a sync, reads its whole tree. Members are read
// until their trees agree or 30 s have passed (a member that just rejoined may still be catching up).
func readMembers(nodes int) finalState {
	var fs finalState
	deadline := time.Now().Add(30 * time.Second)
	for {
		fs = finalState{trees: map[string]map[string]NodeInfo{}, eph: map[string][]string{}, ack: map[string]map[string]*int64{}}
		for i := 1; i <= nodes; i++ {
			name := fmt.Sprintf("n%d", i)
			tree, err := dumpMember(memberAddr(i))
			if err != nil {
				fs.errs = append(fs.errs, fmt.Sprintf("could not read %s's tree after healing: %v", name, err))
				continue
			}
			fs.trees[name] = tree
			ack := map[string]*int64{}
			for p, n := range tree {
				if strings.HasPrefix(p, "/eph/") {
					fs.eph[name] = append(fs.eph[name], strings.TrimPrefix(p, "/eph/"))
				}
				if strings.HasPrefix(p, "/ack/") {
					v, err := strconv.ParseInt(n.Data, 10, 64)
					if err == nil {
						ack[p] = &v
					}
				}
			}
			fs.ack[name] = ack
		}
		if (len(fs.errs) == 0 && len(checkTrees(fs.trees).Violations) == 0) || time.Now().After(deadline) {
			return fs
		}
		time.Sleep(3 * time.Second)
	}
}

func dumpMember(server string) (map[string]NodeInfo, error) {
	c, err := NewClient([]string{server}, 10*time.Second, 10*time.Second, nil, nil)
	if err != nil {
		return nil, err
	}
	defer c.Conn.Close()
	if _, err := c.Conn.Sync("/"); err != nil {
		return nil, err
	}
	tree := map[string]NodeInfo{}
	var walk func(p string) error
	walk = func(p string) error {
		data, st, err := c.Conn.Get(p)
		if err == zk.ErrNoNode {
			return nil
		}
		if err != nil {
			return err
		}
		if p != "/" {
			tree[p] = NodeInfo{Data: string(data), Czxid: st.Czxid, Mzxid: st.Mzxid, Version: st.Version, EphemeralOwner: st.EphemeralOwner, NumChildren: st.NumChildren}
		}
		kids, _, err := c.Conn.Children(p)
		if err == zk.ErrNoNode {
			return nil
		}
		if err != nil {
			return err
		}
		sort.Strings(kids)
		for _, k := range kids {
			child := p + "/" + k
			if p == "/" {
				child = "/" + k
			}
			if child == "/zookeeper" {
				continue
			}
			if err := walk(child); err != nil {
				return err
			}
		}
		return nil
	}
	return tree, walk("/")
}

func report(dir, target, quorum string, nodes int, seed int64, dur time.Duration, nem *Nemesis, ops []Op, verdicts []Verdict, lateRefused int, healthy bool) int {
	t := newTable()
	t.addRun(nem.Cycles, nem.Refused, nem.Outcomes, countOps(ops), verdicts, lateRefused, "")
	if !healthy {
		t.notes = append(t.notes, "NOTE: not every member was serving after the final heal")
	}
	var b strings.Builder
	fmt.Fprintf(&b, "fault run: target %s, %d members, %s, seed %d\nquorum: %s\n\n", target, nodes, dur, seed, quorum)
	t.write(&b)
	os.WriteFile(filepath.Join(dir, "table.txt"), []byte(b.String()), 0o644)
	out, _ := json.MarshalIndent(runSummary{
		Target: target, Quorum: quorum, Nodes: nodes, Seed: seed, Seconds: dur.Seconds(), Cycles: nem.Cycles,
		Refused: nem.Refused, Outcomes: nem.Outcomes, Verdicts: verdicts, OK: t.bad() == 0, Ops: countOps(ops), LateRefused: lateRefused,
		Healthy: healthy,
	}, "", "  ")
	os.WriteFile(filepath.Join(dir, "verdict.json"), out, 0o644)
	fmt.Print(b.String())
	bad := 0
	for _, v := range verdicts {
		if len(v.Violations) > 0 {
			bad++
		}
	}
	fmt.Printf("CHECKS %d %d\n", len(verdicts)-bad, bad)
	if bad > 0 {
		return 1
	}
	return 0
}
