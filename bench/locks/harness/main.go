// lockbench: one load generator for the lock shoot-out (bench/locks/run.sh). It drives every system
// through its usual client and lock recipe, so the figures differ by server, not by generator:
//
//	zk     ZooKeeper protocol (paddock, Apache ZooKeeper): github.com/go-zookeeper/zk, the standard
//	       ephemeral-sequential recipe with Curator's node names; token = the lock node's czxid
//	etcd   go.etcd.io/etcd/client/v3/concurrency.Mutex on a Session (lease); token = the revision the
//	       lock was acquired at, the write fenced by the Mutex's IsOwner() comparison
//	redis  SET key value NX PX, released by the compare-and-delete script redis-py's Lock runs;
//	       waiting as redis-py's Lock.acquire does by default (sleep 0.1 s between tries) or in a tight
//	       loop; no token (the value is random)
//
// Mode bench: --contenders sessions loop acquire, write-with-token, release for --warmup-secs and then
// --duration-secs (measured). Every hold checks exclusion twice: an in-process holder slot, and a
// conditional write to a shared store whose expected version (or counter) is the hand-off count.
// Mode probe: retries a session (and the store's set-up) until it works or --wait-secs pass.
// Mode killtest: one holder takes the lock, prints "HELD <token>", waits for a line on stdin (the
// caller kills the server, or the leader, and restarts it meanwhile), then another client tries to
// take the lock for --wait-secs, and the holder's hold is checked at the server.
//
// Output: one JSON object per run on stdout (and appended to --json). Exit 1 on any exclusion
// violation or error, 2 on bad usage.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Locker is one contender: its own session or connection.
type Locker interface {
	// Acquire blocks until this contender holds the lock; returns its fencing token (0 when the
	// system gives none).
	Acquire(ctx context.Context) (int64, error)
	// Write is the write-with-token to the shared store. expected is the number of hand-offs before
	// this one; false when the store refused it (an overlapping holder, or a fence).
	Write(ctx context.Context, token int64, expected int64) (bool, error)
	// Release lets the lock go; false when the lock was no longer this contender's.
	Release(ctx context.Context) (bool, error)
	// Holds asks the server whether this contender still holds the lock (killtest).
	Holds(ctx context.Context) (bool, error)
	// Told reports whether the client was told its hold (session, lease) was lost.
	Told() bool
	Close()
}

// System makes the shared store and the contenders.
type System interface {
	Setup(ctx context.Context) error
	NewLocker(ctx context.Context, id int) (Locker, error)
	HasToken() bool
	Teardown()
}

type config struct {
	mode, system, endpoints, label, jsonPath, pids, root, redisWait string
	contenders, round                                               int
	duration, warmup, wait, session                                 time.Duration
	redisSleep                                                      time.Duration
}

func main() {
	var c config
	var durationSecs, warmupSecs, waitSecs, sessionSecs, redisSleepSecs float64
	flag.StringVar(&c.mode, "mode", "bench", "bench or killtest")
	flag.StringVar(&c.system, "system", "", "zk, etcd or redis")
	flag.StringVar(&c.endpoints, "endpoints", "", "comma-separated host:port list")
	flag.StringVar(&c.label, "label", "", "name of the system under test, for the report")
	flag.StringVar(&c.jsonPath, "json", "", "append the JSON report to this file")
	flag.StringVar(&c.pids, "pids", "", "comma-separated server pids whose CPU time is measured")
	flag.StringVar(&c.root, "root", "", "key or path prefix for this run (default: unique)")
	flag.StringVar(&c.redisWait, "redis-wait", "sleep", "redis: sleep (redis-py's default) or tight")
	flag.IntVar(&c.contenders, "contenders", 1, "sessions contending for the lock")
	flag.IntVar(&c.round, "round", 1, "bench: the round this run belongs to, for the report")
	flag.Float64Var(&durationSecs, "duration-secs", 10, "measured seconds")
	flag.Float64Var(&warmupSecs, "warmup-secs", 1, "unmeasured seconds before")
	flag.Float64Var(&waitSecs, "wait-secs", 15, "killtest: how long another client tries to take the lock")
	flag.Float64Var(&sessionSecs, "session-secs", 10, "session timeout (zk), lease TTL (etcd)")
	flag.Float64Var(&redisSleepSecs, "redis-sleep-secs", 0.1, "redis sleep mode: pause between tries")
	flag.Parse()
	secs := func(f float64) time.Duration { return time.Duration(f * float64(time.Second)) }
	c.duration, c.warmup, c.wait, c.session, c.redisSleep =
		secs(durationSecs), secs(warmupSecs), secs(waitSecs), secs(sessionSecs), secs(redisSleepSecs)
	if c.endpoints == "" || c.contenders < 1 || c.duration <= 0 || c.warmup < 0 || c.session < time.Second {
		usage("need --endpoints, --contenders >= 1, --duration-secs > 0, --session-secs >= 1")
	}
	if c.redisWait != "sleep" && c.redisWait != "tight" {
		usage("--redis-wait is sleep or tight")
	}
	if c.root == "" {
		c.root = fmt.Sprintf("lockbench-%d-%d", os.Getpid(), time.Now().UnixNano())
	}
	if c.label == "" {
		c.label = c.system
	}
	eps := strings.Split(c.endpoints, ",")
	var sys System
	switch c.system {
	case "zk":
		sys = newZK(eps, c.root, c.session)
	case "etcd":
		sys = newEtcd(eps, c.root, c.session)
	case "redis":
		sys = newRedis(eps[0], c.root, c.redisWait == "tight", c.redisSleep)
	default:
		usage("--system is zk, etcd or redis")
	}
	var report map[string]any
	var ok bool
	switch c.mode {
	case "bench":
		report, ok = runBench(c, sys)
	case "killtest":
		report, ok = runKill(c, sys)
	case "probe":
		report, ok = runProbe(c, sys)
	default:
		usage("--mode is bench, killtest or probe")
	}
	line, _ := json.Marshal(report)
	fmt.Println(string(line))
	if c.jsonPath != "" {
		f, err := os.OpenFile(c.jsonPath, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err == nil {
			_, err = f.Write(append(line, '\n'))
			f.Close()
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "lockbench: writing %s: %v\n", c.jsonPath, err)
			os.Exit(1)
		}
	}
	if !ok {
		os.Exit(1)
	}
}

func usage(msg string) {
	fmt.Fprintf(os.Stderr, "lockbench: %s\n", msg)
	flag.Usage()
	os.Exit(2)
}

// cpuTicks sums user+system clock ticks of the given pids (fields 14 and 15 of /proc/PID/stat,
// counted after the command name, which may hold spaces).
func cpuTicks(pids []int) (int64, error) {
	var total int64
	for _, p := range pids {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p))
		if err != nil {
			return 0, err
		}
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
		if len(f) < 13 {
			return 0, fmt.Errorf("short /proc/%d/stat", p)
		}
		u, _ := strconv.ParseInt(f[11], 10, 64)
		k, _ := strconv.ParseInt(f[12], 10, 64)
		total += u + k
	}
	return total, nil
}

// clkTck is Linux's USER_HZ, 100 on every architecture Go supports here.
const clkTck = 100

func parsePids(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		p, err := strconv.Atoi(f)
		if err != nil {
			return nil, fmt.Errorf("--pids: %q is not a pid", f)
		}
		out = append(out, p)
	}
	return out, nil
}

type errList struct {
	mu    sync.Mutex
	count int
	first string
}

func (e *errList) add(err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.count == 0 {
		e.first = err.Error()
	}
	e.count++
}

func runBench(c config, sys System) (map[string]any, bool) {
	report := map[string]any{"mode": "bench", "system": c.system, "label": c.label, "contenders": c.contenders,
		"round": c.round, "fencing_token": sys.HasToken()}
	if c.system == "redis" {
		report["redis_wait"] = c.redisWait
	}
	fail := func(err error) (map[string]any, bool) {
		report["error"] = err.Error()
		return report, false
	}
	pids, err := parsePids(c.pids)
	if err != nil {
		return fail(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	setupCtx, setupCancel := context.WithTimeout(ctx, 60*time.Second)
	defer setupCancel()
	if err := sys.Setup(setupCtx); err != nil {
		return fail(fmt.Errorf("setup: %w", err))
	}
	defer sys.Teardown()
	lockers := make([]Locker, c.contenders)
	for i := range lockers {
		l, err := sys.NewLocker(setupCtx, i+1)
		if err != nil {
			for _, l := range lockers[:i] {
				l.Close()
			}
			return fail(fmt.Errorf("contender %d: %w", i+1, err))
		}
		lockers[i] = l
	}

	var (
		holder     atomic.Int64 // 0 = free, else the holding contender's id
		handoffs   atomic.Int64 // every completed hold, warm-up included: the store's expected version
		violations atomic.Int64
		lastToken  atomic.Int64
		stop       atomic.Bool
		errs       errList
		wg         sync.WaitGroup
	)
	start := time.Now()
	windowStart := start.Add(c.warmup)
	windowEnd := windowStart.Add(c.duration)
	// Latency samples: every acquisition that completed in the window, plus, for each contender
	// still waiting when the window closes, the time it had waited by then (so a contender that
	// starves shows in the percentiles instead of leaving no sample).
	lat := make([][]int64, c.contenders)
	counts := make([]int64, c.contenders)
	waiting := make([]atomic.Int64, c.contenders) // UnixNano the current wait began, 0 if not waiting
	for i, l := range lockers {
		wg.Add(1)
		go func(i int, l Locker) {
			defer wg.Done()
			id := int64(i + 1)
			for !stop.Load() {
				t0 := time.Now()
				waiting[i].Store(t0.UnixNano())
				token, err := l.Acquire(ctx)
				waiting[i].Store(0)
				if err != nil {
					if !stop.Load() {
						errs.add(fmt.Errorf("contender %d acquire: %w", id, err))
					}
					return
				}
				held := time.Now()
				if !holder.CompareAndSwap(0, id) {
					violations.Add(1)
				}
				if sys.HasToken() {
					// Tokens only grow from holder to holder; a smaller one is a broken fence.
					if prev := lastToken.Swap(token); token <= prev {
						violations.Add(1)
					}
				}
				expected := handoffs.Load()
				okw, err := l.Write(ctx, token, expected)
				if err != nil {
					errs.add(fmt.Errorf("contender %d write: %w", id, err))
					return
				}
				if !okw {
					violations.Add(1)
				}
				handoffs.Add(1)
				holder.CompareAndSwap(id, 0)
				okr, err := l.Release(ctx)
				if err != nil {
					errs.add(fmt.Errorf("contender %d release: %w", id, err))
					return
				}
				if !okr {
					violations.Add(1)
				}
				if !held.Before(windowStart) && held.Before(windowEnd) {
					lat[i] = append(lat[i], held.Sub(t0).Microseconds())
					counts[i]++
				}
			}
		}(i, l)
	}
	time.Sleep(time.Until(windowStart))
	cpu0, cpuErr := cpuTicks(pids)
	self0, _ := cpuTicks([]int{os.Getpid()})
	steal0, all0 := stealTicks()
	time.Sleep(time.Until(windowEnd))
	cpu1, cpuErr1 := cpuTicks(pids)
	self1, _ := cpuTicks([]int{os.Getpid()})
	steal1, all1 := stealTicks()
	var stillWaiting []int64
	for i := range waiting {
		if w := waiting[i].Load(); w != 0 {
			stillWaiting = append(stillWaiting, windowEnd.Sub(time.Unix(0, w)).Microseconds())
		}
	}
	if all1 > all0 {
		report["steal_pct"] = 100 * float64(steal1-steal0) / float64(all1-all0)
	}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		report["loadavg"] = strings.Join(strings.Fields(string(b))[:3], " ")
	}
	stop.Store(true)
	// Contenders still waiting get their turn as the others leave; a stuck one is cut off.
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		errs.add(errors.New("contenders still running 30 s after the end: cancelled"))
		cancel()
		<-done
	}
	for _, l := range lockers {
		l.Close()
	}

	var all []int64
	var n int64
	minC, maxC := int64(-1), int64(0)
	for i := range lat {
		all = append(all, lat[i]...)
		n += counts[i]
		if minC < 0 || counts[i] < minC {
			minC = counts[i]
		}
		if counts[i] > maxC {
			maxC = counts[i]
		}
	}
	all = append(all, stillWaiting...)
	report["waiting_at_end"] = len(stillWaiting)
	sort.Slice(all, func(a, b int) bool { return all[a] < all[b] })
	pct := func(p float64) int64 {
		if len(all) == 0 {
			return 0
		}
		return all[int(p*float64(len(all)-1)+0.5)]
	}
	secs := c.duration.Seconds()
	report["secs"] = secs
	report["handoffs"] = n
	report["handoffs_per_sec"] = float64(n) / secs
	report["acquire_samples"] = len(all)
	report["acquire_p50_us"] = pct(0.50)
	report["acquire_p99_us"] = pct(0.99)
	if len(all) > 0 {
		report["acquire_max_us"] = all[len(all)-1]
	}
	report["min_handoffs_per_contender"] = minC
	report["max_handoffs_per_contender"] = maxC
	report["violations"] = violations.Load()
	report["errors"] = errs.count
	if errs.count > 0 {
		report["first_error"] = errs.first
	}
	report["client_cpu_secs"] = float64(self1-self0) / clkTck
	if len(pids) > 0 {
		if cpuErr != nil || cpuErr1 != nil {
			errs.add(fmt.Errorf("server CPU: %v %v", cpuErr, cpuErr1))
			report["errors"] = errs.count
		} else {
			sc := float64(cpu1-cpu0) / clkTck
			report["server_cpu_secs"] = sc
			if n > 0 {
				report["server_cpu_us_per_handoff"] = sc * 1e6 / float64(n)
			}
		}
	}
	return report, violations.Load() == 0 && errs.count == 0 && n > 0
}

// stealTicks reads the machine's steal time and all its CPU time so far, in clock ticks (the
// first line of /proc/stat): on a virtual machine, steal is time its CPUs were ready but the host
// ran something else, which a run measures as if it were the server's.
func stealTicks() (steal, all int64) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	for i, f := range strings.Fields(line)[1:] {
		v, _ := strconv.ParseInt(f, 10, 64)
		all += v
		if i == 7 {
			steal = v
		}
	}
	return steal, all
}

func runProbe(c config, sys System) (map[string]any, bool) {
	report := map[string]any{"mode": "probe", "system": c.system, "label": c.label}
	t0 := time.Now()
	deadline := t0.Add(c.wait)
	var err error
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		if err = sys.Setup(ctx); err == nil {
			var l Locker
			if l, err = sys.NewLocker(ctx, 1); err == nil {
				l.Close()
			}
		}
		sys.Teardown()
		cancel()
		if err == nil {
			report["ms"] = time.Since(t0).Milliseconds()
			return report, true
		}
		time.Sleep(200 * time.Millisecond)
	}
	report["error"] = fmt.Sprintf("not serving after %v: %v", c.wait, err)
	return report, false
}

func runKill(c config, sys System) (map[string]any, bool) {
	report := map[string]any{"mode": "killtest", "system": c.system, "label": c.label,
		"fencing_token": sys.HasToken()}
	fail := func(err error) (map[string]any, bool) {
		report["error"] = err.Error()
		return report, false
	}
	ctx := context.Background()
	setupCtx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if err := sys.Setup(setupCtx); err != nil {
		return fail(fmt.Errorf("setup: %w", err))
	}
	defer sys.Teardown()
	a, err := sys.NewLocker(setupCtx, 1)
	if err != nil {
		return fail(fmt.Errorf("holder: %w", err))
	}
	defer a.Close()
	token, err := a.Acquire(setupCtx)
	if err != nil {
		return fail(fmt.Errorf("holder acquire: %w", err))
	}
	report["token"] = token
	fmt.Printf("HELD %d\n", token)
	// The caller kills the server (or the leader) now, restarts it, and says so with a line.
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		return fail(fmt.Errorf("waiting for the restart line: %w", err))
	}
	restarted := time.Now()
	// Another client tries to take the lock for --wait-secs.
	otherGot := false
	var otherAfter time.Duration
	bctx, bcancel := context.WithTimeout(ctx, c.wait)
	b, err := sys.NewLocker(bctx, 2)
	if err == nil {
		if _, err = b.Acquire(bctx); err == nil {
			otherGot = true
			otherAfter = time.Since(restarted)
		}
		b.Close()
	}
	bcancel()
	if err != nil && !errors.Is(err, context.DeadlineExceeded) && !strings.Contains(err.Error(), "deadline") {
		report["other_error"] = err.Error()
	}
	time.Sleep(time.Until(restarted.Add(c.wait)))
	// The holder asks the server whether it still holds the lock (its client reconnects first).
	var holds bool
	var herr error
	deadline := time.Now().Add(c.session + 5*time.Second)
	for {
		hctx, hcancel := context.WithTimeout(ctx, 5*time.Second)
		holds, herr = a.Holds(hctx)
		hcancel()
		if herr == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	told := a.Told()
	report["holder_still_holds"] = holds && herr == nil
	if herr != nil {
		report["holds_error"] = herr.Error()
	}
	report["other_acquired"] = otherGot
	if otherGot {
		report["other_acquired_after_ms"] = otherAfter.Milliseconds()
	}
	report["holder_told_of_loss"] = told
	switch {
	case holds && herr == nil && !otherGot:
		report["verdict"] = "kept"
	case otherGot && !told:
		report["verdict"] = "LOST, holder not told"
	case otherGot:
		report["verdict"] = "lost, holder told"
	default:
		report["verdict"] = "lost, nobody holds"
	}
	// Two holders at once is the failure; a lock kept, or lost with the holder told, is the lock
	// doing what it promises (the table shows which).
	return report, !(otherGot && holds && herr == nil)
}
