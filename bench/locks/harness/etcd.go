package main

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.uber.org/zap"
)

// etcd's own lock: concurrency.Mutex on a Session (a lease kept alive by the client). Acquiring
// puts <prefix>/<lease> and waits for every key with a smaller create revision to go (each waiter
// watches only its predecessor). The write is a transaction guarded by Mutex.IsOwner() (the lock
// key still has this holder's create revision): etcd's fence. The token written is the revision
// the lock was acquired at (Mutex.Header().Revision), which grows from holder to holder.
type etcdSystem struct {
	endpoints []string
	prefix    string
	store     string
	ttl       int
	admin     *clientv3.Client
}

func newEtcd(endpoints []string, root string, ttl time.Duration) *etcdSystem {
	return &etcdSystem{endpoints: endpoints, prefix: "/" + root + "-lock", store: "/" + root + "-store",
		ttl: int(ttl.Seconds())}
}

func (s *etcdSystem) HasToken() bool { return true }

func (s *etcdSystem) client() (*clientv3.Client, error) {
	return clientv3.New(clientv3.Config{Endpoints: s.endpoints, DialTimeout: 5 * time.Second,
		Logger: zap.NewNop()})
}

func (s *etcdSystem) Setup(ctx context.Context) error {
	c, err := s.client()
	if err != nil {
		return err
	}
	s.admin = c
	// Version 1 before the first hand-off: the holder of hand-off n expects version n+1.
	if _, err := c.Delete(ctx, s.store); err != nil {
		return fmt.Errorf("delete %s: %w", s.store, err)
	}
	if _, err := c.Put(ctx, s.store, "0"); err != nil {
		return fmt.Errorf("put %s: %w", s.store, err)
	}
	return nil
}

func (s *etcdSystem) Teardown() {
	if s.admin == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, _ = s.admin.Delete(ctx, s.store)
	_, _ = s.admin.Delete(ctx, s.prefix, clientv3.WithPrefix())
	s.admin.Close()
	s.admin = nil
}

type etcdLocker struct {
	s    *etcdSystem
	cli  *clientv3.Client
	sess *concurrency.Session
	mu   *concurrency.Mutex
	told atomic.Bool
}

func (s *etcdSystem) NewLocker(ctx context.Context, _ int) (Locker, error) {
	cli, err := s.client()
	if err != nil {
		return nil, err
	}
	sess, err := concurrency.NewSession(cli, concurrency.WithTTL(s.ttl), concurrency.WithContext(ctx))
	if err != nil {
		cli.Close()
		return nil, fmt.Errorf("session: %w", err)
	}
	l := &etcdLocker{s: s, cli: cli, sess: sess, mu: concurrency.NewMutex(sess, s.prefix)}
	go func() {
		<-sess.Done()
		l.told.Store(true)
	}()
	return l, nil
}

func (l *etcdLocker) Acquire(ctx context.Context) (int64, error) {
	if err := l.mu.Lock(ctx); err != nil {
		return 0, err
	}
	return l.mu.Header().Revision, nil
}

func (l *etcdLocker) Write(ctx context.Context, token int64, expected int64) (bool, error) {
	resp, err := l.cli.Txn(ctx).
		If(l.mu.IsOwner(), clientv3.Compare(clientv3.Version(l.s.store), "=", expected+1)).
		Then(clientv3.OpPut(l.s.store, strconv.FormatInt(token, 10))).
		Commit()
	if err != nil {
		return false, err
	}
	return resp.Succeeded, nil
}

func (l *etcdLocker) Release(ctx context.Context) (bool, error) {
	// Mutex.Unlock deletes the key unconditionally; this is the same single delete, guarded by
	// IsOwner() so that a release of a lock no longer ours is seen (as Redis's checked release).
	resp, err := l.cli.Txn(ctx).If(l.mu.IsOwner()).Then(clientv3.OpDelete(l.mu.Key())).Commit()
	if err != nil {
		return false, err
	}
	return resp.Succeeded, nil
}

func (l *etcdLocker) Holds(ctx context.Context) (bool, error) {
	resp, err := l.cli.Txn(ctx).If(l.mu.IsOwner()).Commit()
	if err != nil {
		return false, err
	}
	return resp.Succeeded, nil
}

func (l *etcdLocker) Told() bool { return l.told.Load() }

func (l *etcdLocker) Close() {
	// Revokes the session's lease: a lock still held goes with it.
	_ = l.sess.Close()
	l.cli.Close()
}
