package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand"
	"net"
	"os"
	"os/signal"
	"sort"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/go-zookeeper/zk"
)

// runLocker is one lock client process: the standard ZooKeeper lock recipe (an ephemeral sequential node
// under /lock; the holder is the lowest; the others watch their predecessor), and while it holds the
// lock it writes to the fenced store with its node's czxid as token. Every step is printed as a JSON Op.
func runLocker(args []string) {
	fs := flag.NewFlagSet("locker", flag.ExitOnError)
	id := fs.Int("id", 0, "client id")
	servers := fs.String("servers", "", "comma-separated host:port list")
	store := fs.String("store", "", "the fenced store's unix socket")
	sessionTimeout := fs.Duration("session-timeout", 4*time.Second, "session timeout")
	seed := fs.Int64("seed", 1, "seed")
	fs.Parse(args)
	rng := rand.New(rand.NewSource(*seed))
	out := json.NewEncoder(os.Stdout)
	emit := func(op Op) { op.W, op.Client = "lock", *id; out.Encode(op) }
	SetClientLog(os.Stderr)

	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	var stopped int32
	go func() { <-stop; atomic.StoreInt32(&stopped, 1) }()
	stopping := func() bool { return atomic.LoadInt32(&stopped) == 1 }

	sconn, err := net.Dial("unix", *store)
	if err != nil {
		fmt.Fprintln(os.Stderr, "locker: no store:", err)
		os.Exit(1)
	}
	sr := bufio.NewScanner(sconn)
	var c *Client
	defer func() {
		if c != nil {
			c.Conn.Close()
		}
	}()
	for !stopping() {
		if c == nil || c.Expired() {
			if c != nil {
				c.Retire()
			}
			if c, err = NewClient(strings.Split(*servers, ","), *sessionTimeout, 5*time.Second, rng, nil); err != nil {
				c = nil
				time.Sleep(500 * time.Millisecond)
				continue
			}
		}
		sess := c.Conn.SessionID()
		lost := func() bool { return c.Expired() || c.Conn.SessionID() != sess }
		var node string
		err := timed(3*time.Second, func() error {
			var err error
			node, err = c.Conn.Create("/lock/n-", nil, zk.FlagEphemeral|zk.FlagSequence, acl)
			return err
		})
		if err != nil {
			// Where the node went is unknown: give the session up (its ephemerals go with it).
			c.Retire()
			c = nil
			continue
		}
		mine, _ := seqOf(node)
		acquired := false
		for !lost() && !stopping() {
			var names []string
			var st *zk.Stat
			err := timed(3*time.Second, func() error {
				var err error
				names, st, err = c.Conn.Children("/lock")
				return err
			})
			if err != nil {
				break
			}
			sort.Slice(names, func(i, j int) bool { a, _ := seqOf(names[i]); b, _ := seqOf(names[j]); return a < b })
			pos := -1
			for i, n := range names {
				if "/lock/"+n == node {
					pos = i
				}
			}
			if pos < 0 {
				break // our node is gone: the session ended
			}
			if pos == 0 {
				var nst *zk.Stat
				if timed(3*time.Second, func() error { var err error; _, nst, err = c.Conn.Exists(node); return err }) != nil || nst == nil {
					break
				}
				emit(Op{F: "acquire", Type: "ok", Session: sess, Key: node, Seq: mine, Czxid: nst.Czxid, Pzxid: st.Pzxid, Names: names, Call: now(), Ret: now()})
				acquired = true
				writes, late := 1+rng.Intn(3), false
				for i := 0; i < writes && !stopping(); i++ {
					t := time.Now()
					fmt.Fprintf(sconn, "W %d %d %d\n", *id, mine, nst.Czxid)
					if !sr.Scan() {
						return
					}
					emit(Op{F: "store", Type: map[bool]string{true: "ok", false: "fail"}[sr.Text() == "OK"], Session: sess, Seq: mine, Czxid: nst.Czxid, Call: t.UnixNano(), Ret: now()})
					time.Sleep(time.Duration(100+rng.Intn(300)) * time.Millisecond)
					// Paused past the session timeout (SIGSTOP) since this write began: a client that does
					// not check its session would go on writing. This one does, once: the store records it,
					// and checkFencing must see its token as older than the new holder's.
					if !late && time.Since(t) > *sessionTimeout {
						late, writes = true, i+2
					}
				}
				break
			}
			var ch <-chan zk.Event
			var ok bool
			pred := "/lock/" + names[pos-1]
			if timed(3*time.Second, func() error { var err error; ok, _, ch, err = c.Conn.ExistsW(pred); return err }) != nil {
				break
			}
			if ok {
				select {
				case <-ch:
				case <-time.After(2 * time.Second):
				}
			}
		}
		t := now()
		derr := timed(3*time.Second, func() error { return c.Conn.Delete(node, -1) })
		if acquired {
			f := "release"
			if lost() {
				f = "lost"
			}
			emit(Op{F: f, Type: classify(derr), Err: errString(derr), Session: sess, Key: node, Seq: mine, Call: t, Ret: now()})
		}
		// A node left behind in a live session would block every other client for good: unless it was
		// deleted for sure, end the session (its ephemerals go with it).
		if lost() || (derr != nil && derr != zk.ErrNoNode) {
			c.Retire()
			c = nil
		}
		time.Sleep(time.Duration(50+rng.Intn(200)) * time.Millisecond)
	}
}
