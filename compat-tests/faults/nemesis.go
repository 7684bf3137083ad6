package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand"
	"net"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Every nemesis kind, grouped; --nemesis takes kinds or group names.
var nemesisGroups = map[string][]string{
	"partition": {"partition-halves", "partition-leader", "partition-bridge", "partition-oneway", "lossy"},
	"kill":      {"kill-one", "kill-minority", "kill-all"},
	"pause":     {"pause-member", "pause-leader"},
	"clock":     {"clock-jump", "clock-skew"},
	"disk": {"disk-truncate-log", "disk-corrupt-log", "disk-corrupt-snapshot", "disk-wipe",
		"disk-lose-unsynced", "disk-torn-write", "disk-full", "disk-eio"},
	"client-pause": {"client-pause"},
}

var groupOrder = []string{"partition", "kill", "pause", "clock", "disk", "client-pause"}

func expandNemeses(list string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	add := func(k string) {
		if !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	for _, item := range strings.Split(list, ",") {
		item = strings.TrimSpace(item)
		switch {
		case item == "" || item == "none":
		case item == "all":
			for _, g := range groupOrder {
				for _, k := range nemesisGroups[g] {
					add(k)
				}
			}
		case nemesisGroups[item] != nil:
			for _, k := range nemesisGroups[item] {
				add(k)
			}
		default:
			found := false
			for _, ks := range nemesisGroups {
				for _, k := range ks {
					if k == item {
						add(k)
						found = true
					}
				}
			}
			if !found {
				return nil, fmt.Errorf("unknown nemesis %q", item)
			}
		}
	}
	return out, nil
}

type Event struct {
	T      string `json:"t"`
	Unix   int64  `json:"unix_ns"`
	Cycle  int    `json:"cycle"`
	Kind   string `json:"nemesis"`
	Action string `json:"action"` // inject, heal, note
	Detail string `json:"detail"`
}

type Nemesis struct {
	Hosts          string // hosts.sh
	Nodes          int
	SessionTimeout time.Duration
	rng            *rand.Rand
	mu             sync.Mutex
	timeline       *json.Encoder
	tlFile         io.Closer
	Cycles         map[string]int
	Refused        map[string]int            // disk faults after which the member would not start
	Outcomes       map[string]map[string]int // per disk kind, what became of the member (disk.go)
	DiskViolations []string                  // paddock's broken disk promises (disk.go)
	Target         string
	Dir            string // the run folder
	Disk           bool   // the members' data dirs are on file systems of their own (hosts.sh fill)
	store          *Store
	cycle          int
	Events         []Event
}

func NewNemesis(hosts string, nodes int, seed int64, path string, st time.Duration) (*Nemesis, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	return &Nemesis{Hosts: hosts, Nodes: nodes, rng: rand.New(rand.NewSource(seed)), timeline: json.NewEncoder(f), tlFile: f,
		Cycles: map[string]int{}, Refused: map[string]int{}, Outcomes: map[string]map[string]int{}, SessionTimeout: st}, nil
}

func (n *Nemesis) log(kind, action, format string, args ...interface{}) {
	t := time.Now().UTC()
	ev := Event{T: t.Format("15:04:05.000"), Unix: t.UnixNano(), Cycle: n.cycle, Kind: kind, Action: action, Detail: fmt.Sprintf(format, args...)}
	n.mu.Lock()
	n.Events = append(n.Events, ev)
	n.timeline.Encode(ev)
	n.mu.Unlock()
	fmt.Fprintf(os.Stderr, "faults: %s cycle %d %s %s: %s\n", ev.T, ev.Cycle, kind, action, ev.Detail)
}

func (n *Nemesis) sh(args ...string) (string, error) {
	cmd := exec.Command("bash", append([]string{n.Hosts}, args...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return strings.TrimSpace(out.String()), err
}

func (n *Nemesis) members() []int {
	m := make([]int, n.Nodes)
	for i := range m {
		m[i] = i + 1
	}
	return m
}

// srvr asks member i for its `Mode:` line (both ZooKeeper and paddock print it).
func srvrMode(i int) string {
	c, err := net.DialTimeout("tcp", memberAddr(i), time.Second)
	if err != nil {
		return "down"
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * time.Second))
	c.Write([]byte("srvr"))
	b, _ := io.ReadAll(c)
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "Mode:") {
			return strings.TrimSpace(strings.TrimPrefix(l, "Mode:"))
		}
	}
	return "not serving"
}

func (n *Nemesis) leader() int {
	for _, i := range n.members() {
		if srvrMode(i) == "leader" {
			return i
		}
	}
	return -1
}

// WaitHealthy waits until every member serves and one of them leads.
func (n *Nemesis) WaitHealthy(d time.Duration) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		ok, leaders, alone := true, 0, 0
		for _, i := range n.members() {
			switch srvrMode(i) {
			case "leader":
				leaders++
			case "follower", "observer":
			case "standalone":
				alone++ // a one-member "ensemble", or servers that do not replicate (see README)
			default:
				ok = false
			}
		}
		if ok && (leaders == 1 || alone == n.Nodes) {
			return true
		}
		time.Sleep(300 * time.Millisecond)
	}
	return false
}

func (n *Nemesis) shuffled() []int {
	m := n.members()
	n.rng.Shuffle(len(m), func(i, j int) { m[i], m[j] = m[j], m[i] })
	return m
}

func ints(xs []int) []string {
	var s []string
	for _, x := range xs {
		s = append(s, strconv.Itoa(x))
	}
	return s
}

func (n *Nemesis) block(a int, from []int) {
	if len(from) > 0 {
		n.sh(append([]string{"block", strconv.Itoa(a)}, ints(from)...)...)
	}
}

// split cuts every link between the two sides, both ways.
func (n *Nemesis) split(left, right []int) {
	for _, a := range left {
		n.block(a, right)
	}
	for _, b := range right {
		n.block(b, left)
	}
}

// HealAll undoes everything: rules flushed, paused members resumed, clocks back, stopped members started.
func (n *Nemesis) HealAll() {
	n.sh("heal")
	for _, i := range n.members() {
		if n.Disk {
			n.sh("unfill", strconv.Itoa(i))
		}
		n.sh("resume", strconv.Itoa(i))
		n.sh("clock", strconv.Itoa(i), "+0")
		n.sh("start", strconv.Itoa(i))
	}
}

// Run one cycle of the given kind: inject, hold, heal. Returns after the heal.
func (n *Nemesis) Run(kind string, hold time.Duration) {
	n.cycle++
	n.Cycles[kind]++
	switch kind {
	case "partition-halves":
		m := n.shuffled()
		left, right := m[:n.Nodes/2], m[n.Nodes/2:]
		n.split(left, right)
		n.log(kind, "inject", "%v | %v", left, right)
		time.Sleep(hold)
		n.sh("heal")
	case "partition-leader":
		l := n.leader()
		if l < 0 {
			l = n.shuffled()[0]
		}
		var rest []int
		for _, i := range n.members() {
			if i != l {
				rest = append(rest, i)
			}
		}
		n.split([]int{l}, rest)
		n.log(kind, "inject", "leader %d isolated from %v", l, rest)
		time.Sleep(hold)
		n.sh("heal")
	case "partition-bridge":
		m := n.shuffled()
		bridge, left, right := m[0], m[1:1+(n.Nodes-1)/2], m[1+(n.Nodes-1)/2:]
		n.split(left, right)
		n.log(kind, "inject", "%v | %v, bridged by %d", left, right, bridge)
		time.Sleep(hold)
		n.sh("heal")
	case "partition-oneway":
		m := n.shuffled()
		a := m[0]
		if n.rng.Intn(2) == 0 {
			if l := n.leader(); l > 0 {
				a = l
			}
		}
		var rest []int
		for _, i := range n.members() {
			if i != a {
				rest = append(rest, i)
			}
		}
		n.block(a, rest)
		n.log(kind, "inject", "member %d drops every packet from %v (it can still send)", a, rest)
		time.Sleep(hold)
		n.sh("heal")
	case "lossy":
		pct := 20 + n.rng.Intn(30)
		for _, a := range n.members() {
			var rest []int
			for _, b := range n.members() {
				if a != b {
					rest = append(rest, b)
				}
			}
			n.sh(append([]string{"lossy", strconv.Itoa(a), strconv.Itoa(pct)}, ints(rest)...)...)
		}
		n.log(kind, "inject", "every member-to-member link drops %d%% of packets", pct)
		time.Sleep(hold)
		n.sh("heal")
	case "kill-one", "kill-minority", "kill-all":
		count := map[string]int{"kill-one": 1, "kill-minority": (n.Nodes - 1) / 2, "kill-all": n.Nodes}[kind]
		victims := n.shuffled()[:count]
		sort.Ints(victims)
		for _, v := range victims {
			n.sh("kill", strconv.Itoa(v))
		}
		n.log(kind, "inject", "kill -9 %v", victims)
		time.Sleep(hold)
		for _, v := range victims {
			n.sh("start", strconv.Itoa(v))
		}
	case "pause-member", "pause-leader":
		v := n.shuffled()[0]
		if kind == "pause-leader" {
			if l := n.leader(); l > 0 {
				v = l
			}
		}
		// Alternately past the election timeout (syncLimit x tickTime = 2 s) and past the session timeout.
		d := 3 * time.Second
		what := "longer than the election timeout"
		if n.Cycles[kind]%2 == 0 {
			d, what = n.SessionTimeout*2+time.Second, "longer than the session timeout"
		}
		mode := srvrMode(v)
		n.sh("pause", strconv.Itoa(v))
		n.log(kind, "inject", "SIGSTOP member %d (%s) for %s, %s", v, mode, d, what)
		time.Sleep(d)
		n.sh("resume", strconv.Itoa(v))
	case "clock-jump":
		v := n.shuffled()[0]
		off := (30 + n.rng.Intn(600)) * []int{-1, 1}[n.rng.Intn(2)]
		spec := fmt.Sprintf("%+ds", off)
		n.sh("clock", strconv.Itoa(v), spec)
		n.log(kind, "inject", "member %d's wall clock jumps %s", v, spec)
		time.Sleep(hold)
		n.sh("clock", strconv.Itoa(v), "+0")
	case "clock-skew":
		v := n.shuffled()[0]
		// A clock running fast: the offset grows by 1 s every 250 ms of real time (x5).
		n.log(kind, "inject", "member %d's wall clock runs 5x fast for %s", v, hold)
		start := time.Now()
		for time.Since(start) < hold {
			n.sh("clock", strconv.Itoa(v), fmt.Sprintf("+%ds", int(time.Since(start).Seconds()*4)))
			time.Sleep(250 * time.Millisecond)
		}
		n.sh("clock", strconv.Itoa(v), "+0")
	case "disk-truncate-log", "disk-corrupt-log", "disk-corrupt-snapshot", "disk-wipe",
		"disk-lose-unsynced", "disk-torn-write", "disk-full", "disk-eio":
		n.runDisk(kind, hold)
	case "client-pause":
		id, cmd := -1, (*exec.Cmd)(nil)
		if n.store != nil {
			for t := 0; t < 100 && id < 0; t++ {
				id, cmd = n.store.Holder(n.rng)
				if id < 0 {
					time.Sleep(100 * time.Millisecond)
				}
			}
		}
		if id < 0 || cmd == nil || cmd.Process == nil {
			n.log(kind, "inject", "no lock holder to pause (lock workload off or idle)")
			n.Cycles[kind]--
			return
		}
		d := n.SessionTimeout*2 + time.Second
		n.store.MarkPaused(id)
		cmd.Process.Signal(syscall.SIGSTOP)
		n.log(kind, "inject", "SIGSTOP lock holder client %d (pid %d) for %s, past its session timeout %s", id, cmd.Process.Pid, d, n.SessionTimeout)
		time.Sleep(d)
		cmd.Process.Signal(syscall.SIGCONT)
	}
	n.log(kind, "heal", "healed")
}

func (n *Nemesis) waitMember(i int, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		switch srvrMode(i) {
		case "leader", "follower", "observer", "standalone":
			return true
		}
		if out, _ := n.sh("alive", strconv.Itoa(i)); out == "no" {
			return false // it exited: refused to start
		}
		time.Sleep(300 * time.Millisecond)
	}
	return false
}
