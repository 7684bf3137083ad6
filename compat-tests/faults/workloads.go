package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"net"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/go-zookeeper/zk"
)

var acl = zk.WorldACL(zk.PermAll)

type Env struct {
	Servers        []string
	SessionTimeout time.Duration
	OpTimeout      time.Duration
	H              *History
	Seed           int64
	RunDir         string
}

// loop runs one worker: it keeps a client, runs step with it, and replaces the client when step says so
// (after an indeterminate op) or when it cannot connect.
func (e *Env) loop(ctx context.Context, wg *sync.WaitGroup, seed int64, step func(c *Client, rng *rand.Rand) (retire bool)) {
	wg.Add(1)
	go func() {
		defer wg.Done()
		rng := rand.New(rand.NewSource(seed))
		var c *Client
		for ctx.Err() == nil {
			if c == nil {
				var err error
				c, err = NewClient(e.Servers, e.SessionTimeout, 5*time.Second, rng, nil)
				if err != nil {
					c = nil
					sleepCtx(ctx, 500*time.Millisecond)
					continue
				}
			}
			if step(c, rng) || c.Expired() {
				c.Retire()
				c = nil
			}
			sleepCtx(ctx, time.Duration(5+rng.Intn(30))*time.Millisecond)
		}
		if c != nil {
			c.Conn.Close()
		}
	}()
}

func sleepCtx(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

func ensure(c *zk.Conn, path string) error {
	_, err := c.Create(path, []byte("0"), 0, acl)
	if err == zk.ErrNodeExists {
		return nil
	}
	return err
}

// Setup creates the workloads' parent nodes, retrying until the ensemble serves.
func (e *Env) Setup(keys int) error {
	deadline := time.Now().Add(60 * time.Second)
	for {
		c, err := NewClient(e.Servers, e.SessionTimeout, 5*time.Second, nil, nil)
		if err == nil {
			paths := []string{"/reg", "/order", "/order/shared", "/lock", "/ids", "/eph", "/ack", "/watch"}
			for k := 0; k < keys; k++ {
				paths = append(paths, regKey(0, k))
			}
			for _, p := range paths {
				if err = ensure(c.Conn, p); err != nil {
					break
				}
			}
			c.Conn.Close()
			if err == nil {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("could not create the workloads' nodes: %v", err)
		}
		time.Sleep(time.Second)
	}
}

// ---- register ----

// regKey is key k of generation g. Every generation's keys are created holding "0" (version 0, the
// register model's initial state) before any client is given them.
func regKey(g int64, k int) string { return fmt.Sprintf("/reg/g%d-k%d", g, k) }

// Register runs the register workload on `keys` keys at a time, moving every `period` to a fresh
// generation of keys (Jepsen's independent keys): Porcupine's search is exponential in the operations
// open at once on one key (an indeterminate write stays open to the end of the history), so a key that
// lives for the whole of a long run makes the check of its history run out of memory. Each key's
// history is checked on its own; a fault cycle still lands on the keys in use while it lasts.
func (e *Env) Register(ctx context.Context, wg *sync.WaitGroup, workers, keys int, period time.Duration) {
	var uniq int64
	var mu sync.Mutex
	next := func() int64 { mu.Lock(); defer mu.Unlock(); uniq++; return uniq }
	var gen atomic.Int64 // the generation in use; its keys exist (Setup made generation 0's)
	wg.Add(1)
	go func() {
		defer wg.Done()
		rng := rand.New(rand.NewSource(e.Seed*1000 + 999))
		var c *Client
		defer func() {
			if c != nil {
				c.Conn.Close()
			}
		}()
		for g := int64(1); ; g++ {
			sleepCtx(ctx, period)
			// Make generation g's keys, retrying through faults; only then hand them out.
			for k := 0; k < keys && ctx.Err() == nil; {
				if c == nil {
					var err error
					if c, err = NewClient(e.Servers, e.SessionTimeout, 5*time.Second, rng, nil); err != nil {
						c = nil
						sleepCtx(ctx, 500*time.Millisecond)
						continue
					}
				}
				err := timed(e.OpTimeout, func() error { return ensure(c.Conn, regKey(g, k)) })
				if err != nil {
					c.Retire()
					c = nil
					sleepCtx(ctx, 200*time.Millisecond)
					continue
				}
				k++
			}
			if ctx.Err() != nil {
				return
			}
			gen.Store(g)
		}
	}()
	for w := 0; w < workers; w++ {
		lastVer := map[string]int32{}
		e.loop(ctx, wg, e.Seed*1000+int64(w), func(c *Client, rng *rand.Rand) bool {
			key := regKey(gen.Load(), rng.Intn(keys))
			op := Op{W: "register", Client: c.ID, Key: key, Session: c.Conn.SessionID()}
			op.Call = now()
			var err error
			switch r := rng.Intn(10); {
			case r < 5:
				op.F = "read"
				var data []byte
				var st *zk.Stat
				err = timed(e.OpTimeout, func() error {
					if _, err := c.Conn.Sync(key); err != nil {
						return err
					}
					var err error
					data, st, err = c.Conn.Get(key)
					return err
				})
				if err == nil {
					op.OutVal, _ = strconv.ParseInt(string(data), 10, 64)
					op.OutVer = st.Version
					lastVer[key] = st.Version
				}
			case r < 7:
				op.F, op.Value, op.Ver = "write", next(), -1
				var st *zk.Stat
				err = timed(e.OpTimeout, func() error {
					var err error
					st, err = c.Conn.Set(key, []byte(strconv.FormatInt(op.Value, 10)), -1)
					return err
				})
				if err == nil {
					op.OutVer = st.Version
					lastVer[key] = st.Version
				}
			default:
				op.F, op.Value, op.Ver = "cas", next(), lastVer[key]
				var st *zk.Stat
				err = timed(e.OpTimeout, func() error {
					var err error
					st, err = c.Conn.Set(key, []byte(strconv.FormatInt(op.Value, 10)), op.Ver)
					return err
				})
				if err == nil {
					op.OutVer = st.Version
					lastVer[key] = st.Version
				}
			}
			op.Ret, op.Type, op.Err, op.Server = now(), classify(err), errString(err), c.Conn.Server()
			e.H.Add(op)
			return op.Type == "info"
		})
	}
}

// ---- per-session order and read-your-writes (plain reads, no sync: the session guarantees) ----

func (e *Env) Order(ctx context.Context, wg *sync.WaitGroup, workers int) {
	for w := 0; w < workers; w++ {
		var own string
		var n int64
		var ownSession int64
		e.loop(ctx, wg, e.Seed*2000+int64(w), func(c *Client, rng *rand.Rand) bool {
			sess := c.Conn.SessionID()
			if own == "" || ownSession != sess {
				own = fmt.Sprintf("/order/own-%d-%d", c.ID, n)
				ownSession = sess
				err := timed(e.OpTimeout, func() error { return ensure(c.Conn, own) })
				if err != nil {
					own = ""
					return classify(err) == "info"
				}
			}
			key := own
			if rng.Intn(2) == 0 {
				key = "/order/shared"
			}
			n++
			op := Op{W: "order", Client: c.ID, Key: key, Session: sess, Call: now()}
			var err error
			var st *zk.Stat
			if rng.Intn(2) == 0 {
				op.F, op.Value = "set", n
				err = timed(e.OpTimeout, func() error {
					var err error
					st, err = c.Conn.Set(key, []byte(strconv.FormatInt(n, 10)), -1)
					return err
				})
			} else {
				op.F = "get"
				var data []byte
				err = timed(e.OpTimeout, func() error {
					var err error
					data, st, err = c.Conn.Get(key)
					return err
				})
				if err == nil {
					op.OutVal, _ = strconv.ParseInt(string(data), 10, 64)
				}
			}
			if err == nil {
				op.Mzxid = st.Mzxid
			}
			op.Ret, op.Type, op.Err, op.Server = now(), classify(err), errString(err), c.Conn.Server()
			if c.Conn.SessionID() != sess {
				op.Type = "info" // the session changed under the op: not judged
			}
			e.H.Add(op)
			return op.Type == "info"
		})
	}
}

// ---- unique ids ----

func (e *Env) IDs(ctx context.Context, wg *sync.WaitGroup, workers int) {
	for w := 0; w < workers; w++ {
		e.loop(ctx, wg, e.Seed*3000+int64(w), func(c *Client, rng *rand.Rand) bool {
			op := Op{W: "ids", F: "create", Client: c.ID, Session: c.Conn.SessionID(), Call: now()}
			var name string
			err := timed(e.OpTimeout, func() error {
				var err error
				name, err = c.Conn.Create("/ids/id-", nil, zk.FlagSequence, acl)
				return err
			})
			if err == nil {
				op.Key = name
				_ = timed(e.OpTimeout, func() error {
					_, st, err := c.Conn.Exists(name)
					if err == nil && st != nil {
						op.Czxid = st.Czxid
					}
					return err
				})
			}
			op.Ret, op.Type, op.Err, op.Server = now(), classify(err), errString(err), c.Conn.Server()
			e.H.Add(op)
			return op.Type == "info"
		})
	}
}

// ---- acknowledged writes ----

func (e *Env) Ack(ctx context.Context, wg *sync.WaitGroup, workers int) {
	var mu sync.Mutex
	var uniq int64
	next := func() int64 { mu.Lock(); defer mu.Unlock(); uniq++; return uniq }
	for w := 0; w < workers; w++ {
		var mine []string
		var owner int
		e.loop(ctx, wg, e.Seed*4000+int64(w), func(c *Client, rng *rand.Rand) bool {
			if owner != c.ID {
				mine, owner = nil, c.ID // a fresh client writes fresh nodes: each node has one writer
			}
			op := Op{W: "ack", Client: c.ID, Value: next(), Call: now()}
			var err error
			if len(mine) < 3 || rng.Intn(4) == 0 {
				op.F, op.Key = "create", fmt.Sprintf("/ack/c%d-%d", c.ID, len(mine))
				err = timed(e.OpTimeout, func() error {
					_, err := c.Conn.Create(op.Key, []byte(strconv.FormatInt(op.Value, 10)), 0, acl)
					return err
				})
				if err == nil {
					mine = append(mine, op.Key)
				}
			} else {
				op.F, op.Key = "set", mine[rng.Intn(len(mine))]
				err = timed(e.OpTimeout, func() error {
					_, err := c.Conn.Set(op.Key, []byte(strconv.FormatInt(op.Value, 10)), -1)
					return err
				})
			}
			op.Ret, op.Type, op.Err, op.Server = now(), classify(err), errString(err), c.Conn.Server()
			e.H.Add(op)
			return op.Type == "info"
		})
	}
}

// ---- ephemerals ----

func (e *Env) Eph(ctx context.Context, wg *sync.WaitGroup, workers int) {
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			rng := rand.New(rand.NewSource(e.Seed*5000 + int64(w)))
			for ctx.Err() == nil {
				c, err := NewClient(e.Servers, e.SessionTimeout, 5*time.Second, rng, nil)
				if err != nil {
					sleepCtx(ctx, 500*time.Millisecond)
					continue
				}
				sess := c.Conn.SessionID()
				for i := 0; i < 1+rng.Intn(3); i++ {
					op := Op{W: "eph", F: "create", Client: c.ID, Session: sess, Key: fmt.Sprintf("/eph/s%x-%d", sess, i), Call: now()}
					err := timed(e.OpTimeout, func() error {
						_, err := c.Conn.Create(op.Key, nil, zk.FlagEphemeral, acl)
						return err
					})
					op.Ret, op.Type, op.Err, op.Server = now(), classify(err), errString(err), c.Conn.Server()
					e.H.Add(op)
					if op.Type == "info" {
						break
					}
				}
				sleepCtx(ctx, time.Duration(200+rng.Intn(1300))*time.Millisecond)
				start := now()
				expired := c.Expired()
				c.Conn.Close()
				// Close waits at most a second for the server's answer; if it did not come, the session
				// ends by expiry: the session has ended for sure one session timeout (plus slack) later.
				end := Op{W: "eph", F: "end", Client: c.ID, Session: sess, Call: start, Type: "ok", Err: "closed"}
				end.Ret = now() + int64(e.SessionTimeout) + int64(2*time.Second)
				if expired {
					end.Err, end.Ret = "expired", start
				}
				e.H.Add(end)
			}
		}(w)
	}
	// The sweeper: a linearizable listing of /eph (sync, then read) every half second.
	e.loop(ctx, wg, e.Seed*5500, func(c *Client, rng *rand.Rand) bool {
		op := Op{W: "eph", F: "sweep", Client: c.ID, Call: now()}
		err := timed(e.OpTimeout, func() error {
			if _, err := c.Conn.Sync("/eph"); err != nil {
				return err
			}
			var err error
			op.Names, _, err = c.Conn.Children("/eph")
			return err
		})
		op.Ret, op.Type, op.Err, op.Server = now(), classify(err), errString(err), c.Conn.Server()
		e.H.Add(op)
		sleepCtx(ctx, 500*time.Millisecond)
		return op.Type == "info"
	})
}

// ---- watches ----

func (e *Env) Watch(ctx context.Context, wg *sync.WaitGroup, nodes int) {
	wg.Add(1)
	go func() {
		defer wg.Done()
		rng := rand.New(rand.NewSource(e.Seed*6000 + 1))
		var watcher, writer *Client
		onEvent := func(c *Client, ev zk.Event) {
			if ev.Type == zk.EventSession || !strings.HasPrefix(ev.Path, "/watch/r") {
				return
			}
			round, _ := strconv.ParseInt(strings.SplitN(strings.TrimPrefix(ev.Path, "/watch/r"), "/", 2)[0], 10, 64)
			e.H.Add(Op{W: "watch", F: "event", Client: c.ID, Session: c.Conn.SessionID(), Key: ev.Path, Seq: round,
				Ver: c.Epoch(), Err: ev.Type.String(), Type: "ok", Call: now(), Ret: now()})
		}
		for round := int64(0); ctx.Err() == nil; round++ {
			var err error
			if watcher == nil || watcher.Expired() {
				if watcher != nil {
					watcher.Retire()
				}
				if watcher, err = NewClient(e.Servers, e.SessionTimeout, 5*time.Second, rng, onEvent); err != nil {
					watcher = nil
					sleepCtx(ctx, 500*time.Millisecond)
					continue
				}
			}
			if writer == nil || writer.Expired() {
				if writer != nil {
					writer.Retire()
				}
				if writer, err = NewClient(e.Servers, e.SessionTimeout, 5*time.Second, rng, nil); err != nil {
					writer = nil
					sleepCtx(ctx, 500*time.Millisecond)
					continue
				}
			}
			dir := fmt.Sprintf("/watch/r%d", round)
			if err := timed(e.OpTimeout, func() error { return ensure(writer.Conn, dir) }); err != nil {
				writer.Retire()
				writer = nil
				continue
			}
			sess, epoch := watcher.Conn.SessionID(), watcher.Epoch()
			var paths []string
			for k := 0; k < nodes; k++ {
				p := fmt.Sprintf("%s/k%d", dir, k)
				op := Op{W: "watch", F: "register", Client: watcher.ID, Session: sess, Key: p, Seq: round, Call: now()}
				err := timed(e.OpTimeout, func() error {
					_, _, _, err := watcher.Conn.ExistsW(p)
					return err
				})
				op.Ret, op.Type, op.Err = now(), classify(err), errString(err)
				e.H.Add(op)
				if err == nil {
					paths = append(paths, p)
				}
			}
			rng.Shuffle(len(paths), func(i, j int) { paths[i], paths[j] = paths[j], paths[i] })
			allOK := true
			for _, p := range paths {
				op := Op{W: "watch", F: "create", Client: writer.ID, Key: p, Seq: round, Call: now()}
				err := timed(e.OpTimeout, func() error {
					_, err := writer.Conn.Create(p, nil, 0, acl)
					return err
				})
				op.Ret, op.Type, op.Err = now(), classify(err), errString(err)
				e.H.Add(op)
				if err != nil {
					allOK = false
					if op.Type == "info" {
						break
					}
				}
				sleepCtx(ctx, time.Duration(10+rng.Intn(60))*time.Millisecond)
			}
			// Give the events time to arrive (a reconnect replays them), then close the round: judged for
			// lost events only if the watcher kept its session and every create was acknowledged.
			time.Sleep(1500 * time.Millisecond)
			_ = timed(e.OpTimeout, func() error { _, err := watcher.Conn.Sync(dir); return err })
			time.Sleep(200 * time.Millisecond)
			end := Op{W: "watch", F: "round-end", Client: watcher.ID, Session: sess, Seq: round, Call: now(), Ret: now(), Type: "info"}
			if allOK && !watcher.Expired() && watcher.Conn.SessionID() == sess && watcher.Conn.State() == zk.StateHasSession {
				end.Type = "ok"
			}
			end.Ver = watcher.Epoch() - epoch
			e.H.Add(end)
		}
		if watcher != nil {
			watcher.Conn.Close()
		}
		if writer != nil {
			writer.Conn.Close()
		}
	}()
}

// ---- lock with fencing: lockers are separate processes (so the client-pause nemesis can SIGSTOP one),
// the fenced store lives here ----

type Store struct {
	mu     sync.Mutex
	h      *History
	paused map[int]int64 // lockers paused while holding: the lock node (sequence number) they held
	holder map[int]bool  // lockers that hold the lock now (their own view)
	held   map[int]int64 // the sequence number of the node each holder holds
	procs  map[int]*exec.Cmd
}

// write records a holder's write and accepts it, whatever its token: the store fences nothing itself,
// so that a stale token reaching it is in the log for checkFencing to see (a store that refused it would
// leave the checker only the writes it had already judged good).
func (s *Store) write(client int, seq, token int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	op := Op{W: "lock", F: "write", Client: client, Seq: seq, Czxid: token, Call: now(), Type: "ok"}
	if p, ok := s.paused[client]; ok && p == seq {
		op.Err = "late"
	}
	op.Ret = now()
	s.h.Add(op)
	return true
}

// Holder picks a locker that holds the lock now, or -1.
func (s *Store) Holder(rng *rand.Rand) (int, *exec.Cmd) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ids []int
	for id, h := range s.holder {
		if h {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return -1, nil
	}
	sort.Ints(ids)
	id := ids[rng.Intn(len(ids))]
	return id, s.procs[id]
}

func (s *Store) MarkPaused(id int) { s.mu.Lock(); s.paused[id] = s.held[id]; s.mu.Unlock() }

func (e *Env) Lock(ctx context.Context, wg *sync.WaitGroup, lockers int, self string) (*Store, error) {
	st := &Store{h: e.H, paused: map[int]int64{}, holder: map[int]bool{}, held: map[int]int64{}, procs: map[int]*exec.Cmd{}}
	sock := e.RunDir + "/store.sock"
	os.Remove(sock)
	ln, err := net.Listen("unix", sock)
	if err != nil {
		return nil, err
	}
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				r := bufio.NewScanner(conn)
				for r.Scan() {
					var client int
					var seq, token int64
					if _, err := fmt.Sscanf(r.Text(), "W %d %d %d", &client, &seq, &token); err != nil {
						return
					}
					if st.write(client, seq, token) {
						fmt.Fprintln(conn, "OK")
					} else {
						fmt.Fprintln(conn, "REFUSED")
					}
				}
			}()
		}
	}()
	go func() { <-ctx.Done(); ln.Close() }()
	for i := 1; i <= lockers; i++ {
		id := 100000 + i
		cmd := exec.Command(self, "locker", "--id", strconv.Itoa(id), "--servers", strings.Join(e.Servers, ","),
			"--store", sock, "--session-timeout", e.SessionTimeout.String(), "--seed", strconv.FormatInt(e.Seed+int64(i), 10))
		// A locker dies with the driver (even a killed one): none may outlive the run.
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		out, _ := cmd.StdoutPipe()
		logf, _ := os.Create(fmt.Sprintf("%s/locker-%d.log", e.RunDir, i))
		cmd.Stderr = logf
		if err := cmd.Start(); err != nil {
			return nil, err
		}
		st.mu.Lock()
		st.procs[id] = cmd
		st.mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			sc := bufio.NewScanner(out)
			sc.Buffer(make([]byte, 1<<20), 1<<20)
			for sc.Scan() {
				var op Op
				if json.Unmarshal(sc.Bytes(), &op) != nil {
					continue
				}
				st.mu.Lock()
				switch op.F {
				case "acquire":
					st.holder[op.Client] = op.Type == "ok"
					st.held[op.Client] = op.Seq
				case "release", "lost":
					st.holder[op.Client] = false
				}
				st.mu.Unlock()
				e.H.Add(op)
			}
			cmd.Wait()
			logf.Close()
		}()
		go func() {
			<-ctx.Done()
			cmd.Process.Signal(syscall.SIGCONT)
			cmd.Process.Signal(syscall.SIGTERM)
		}()
	}
	// The monitor: listings of /lock at their pzxid, the server's view of who is queued.
	e.loop(ctx, wg, e.Seed*7000, func(c *Client, rng *rand.Rand) bool {
		op := Op{W: "lock", F: "monitor", Client: c.ID, Call: now()}
		var stt *zk.Stat
		err := timed(e.OpTimeout, func() error {
			var err error
			op.Names, stt, err = c.Conn.Children("/lock")
			return err
		})
		if err == nil {
			op.Pzxid = stt.Pzxid
		}
		op.Ret, op.Type, op.Err, op.Server = now(), classify(err), errString(err), c.Conn.Server()
		e.H.Add(op)
		sleepCtx(ctx, 150*time.Millisecond)
		return op.Type == "info"
	})
	return st, nil
}
