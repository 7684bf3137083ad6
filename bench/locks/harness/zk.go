package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
)

// The ZooKeeper recipe (the one Curator's InterProcessMutex and paddock's recipes use): an
// ephemeral-sequential node per contender under the lock's directory, named
// _c_<guid>-lock-<seq> (go-zookeeper's protected create, as Curator names it); the lowest sequence
// holds; each waiter watches only its predecessor. The token is the holder node's czxid.
type zkSystem struct {
	servers []string
	dir     string // the lock's directory
	store   string // the shared store the holder writes its token to
	session time.Duration
	admin   *zk.Conn
}

func newZK(servers []string, root string, session time.Duration) *zkSystem {
	return &zkSystem{servers: servers, dir: "/" + root + "-lock", store: "/" + root + "-store", session: session}
}

func (s *zkSystem) HasToken() bool { return true }

var zkQuiet = zk.WithLogger(log.New(io.Discard, "", 0))

// connect opens a session and waits until it is established.
func (s *zkSystem) connect(ctx context.Context, told *atomic.Bool) (*zk.Conn, error) {
	conn, events, err := zk.Connect(s.servers, s.session, zkQuiet, zk.WithLogInfo(false))
	if err != nil {
		return nil, err
	}
	connected := make(chan struct{})
	go func() {
		once := false
		for ev := range events {
			if ev.State == zk.StateHasSession && !once {
				once = true
				close(connected)
			}
			if ev.State == zk.StateExpired && told != nil {
				told.Store(true)
			}
		}
	}()
	select {
	case <-connected:
		return conn, nil
	case <-ctx.Done():
		conn.Close()
		return nil, fmt.Errorf("no session with %v: %w", s.servers, ctx.Err())
	}
}

func (s *zkSystem) Setup(ctx context.Context) error {
	conn, err := s.connect(ctx, nil)
	if err != nil {
		return err
	}
	s.admin = conn
	for _, p := range []string{s.dir, s.store} {
		if _, err := conn.Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return fmt.Errorf("create %s: %w", p, err)
		}
	}
	return nil
}

func (s *zkSystem) Teardown() {
	if s.admin == nil {
		return
	}
	// Left-over lock nodes are ephemeral and gone with their sessions; the directory may still
	// list some for a moment, so a failed delete is harmless.
	_ = s.admin.Delete(s.store, -1)
	_ = s.admin.Delete(s.dir, -1)
	s.admin.Close()
	s.admin = nil
}

type zkLocker struct {
	s    *zkSystem
	conn *zk.Conn
	mine string // full path of this contender's node while it holds or waits
	told atomic.Bool
}

func (s *zkSystem) NewLocker(ctx context.Context, _ int) (Locker, error) {
	l := &zkLocker{s: s}
	conn, err := s.connect(ctx, &l.told)
	if err != nil {
		return nil, err
	}
	l.conn = conn
	return l, nil
}

func seqOf(name string) (int64, error) {
	i := strings.LastIndex(name, "-lock-")
	if i < 0 {
		return 0, fmt.Errorf("lock node %q has no sequence", name)
	}
	return strconv.ParseInt(name[i+len("-lock-"):], 10, 64)
}

func (l *zkLocker) Acquire(ctx context.Context) (int64, error) {
	path, err := l.conn.CreateProtectedEphemeralSequential(l.s.dir+"/lock-", nil, zk.WorldACL(zk.PermAll))
	if err != nil {
		return 0, fmt.Errorf("create: %w", err)
	}
	l.mine = path
	me := path[strings.LastIndexByte(path, '/')+1:]
	mySeq, err := seqOf(me)
	if err != nil {
		return 0, err
	}
	for {
		children, _, err := l.conn.Children(l.s.dir)
		if err != nil {
			return 0, fmt.Errorf("getChildren: %w", err)
		}
		type node struct {
			seq  int64
			name string
		}
		var lower []node
		found := false
		for _, c := range children {
			if c == me {
				found = true
				continue
			}
			if q, err := seqOf(c); err == nil && q < mySeq {
				lower = append(lower, node{q, c})
			}
		}
		if !found {
			return 0, fmt.Errorf("own lock node %s is missing", me)
		}
		if len(lower) == 0 {
			ok, stat, err := l.conn.Exists(path)
			if err != nil || !ok {
				return 0, fmt.Errorf("exists %s: %v (exists: %v)", path, err, ok)
			}
			return stat.Czxid, nil
		}
		sort.Slice(lower, func(a, b int) bool { return lower[a].seq < lower[b].seq })
		pred := l.s.dir + "/" + lower[len(lower)-1].name
		exists, _, ch, err := l.conn.ExistsW(pred)
		if err != nil {
			return 0, fmt.Errorf("exists %s: %w", pred, err)
		}
		if exists {
			select {
			case <-ch:
			case <-ctx.Done():
				return 0, ctx.Err()
			}
		}
	}
}

func (l *zkLocker) Write(_ context.Context, token int64, expected int64) (bool, error) {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(token))
	_, err := l.conn.Set(l.s.store, b[:], int32(expected))
	if errors.Is(err, zk.ErrBadVersion) {
		return false, nil
	}
	return err == nil, err
}

func (l *zkLocker) Release(_ context.Context) (bool, error) {
	err := l.conn.Delete(l.mine, -1)
	l.mine = ""
	if errors.Is(err, zk.ErrNoNode) {
		return false, nil
	}
	return err == nil, err
}

func (l *zkLocker) Holds(_ context.Context) (bool, error) {
	if l.told.Load() {
		return false, nil
	}
	ok, stat, err := l.conn.Exists(l.mine)
	if err != nil {
		return false, err
	}
	return ok && stat.EphemeralOwner == l.conn.SessionID(), nil
}

func (l *zkLocker) Told() bool { return l.told.Load() }

func (l *zkLocker) Close() { l.conn.Close() }
